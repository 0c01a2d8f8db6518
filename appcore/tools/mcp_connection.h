#pragma once
// One of the user's MCP servers in the app, on a thread of its own: its client (mcp/mcp_client.h)
// started and its tools listed (again whenever the server says they changed), its calls run one
// at a time, each stoppable. The client blocks, so it never runs on the UI thread: the UI asks,
// and the answers come back as signals on the thread that owns this object. Deleting it stops
// the call in flight and ends the server (its process, or its HTTP session).

#include <QObject>
#include <QString>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "mcp/mcp_config.h"
#include "mcp/mcp_types.h"

namespace pagedchat::mcp {
class Client;
class Transport;
}

class McpConnection : public QObject {
  Q_OBJECT
 public:
  enum class State { Off, Starting, Ready, Failed };

  explicit McpConnection(pagedchat::mcp::ServerConfig config, QObject* parent = nullptr);
  ~McpConnection() override;

  QString name() const { return QString::fromStdString(m_config.name); }
  const pagedchat::mcp::ServerConfig& config() const { return m_config; }
  State state() const { return m_state; }
  QString failure() const { return m_failure; }  // State::Failed: why, naming the server
  const std::vector<pagedchat::mcp::Tool>& tools() const { return m_tools; }
  bool hasTool(const QString& tool) const;

  // Starts the server (again, after a failure): Starting, then Ready or Failed. A disabled
  // server stays Off.
  void start();
  // Runs `tool` with `argumentsJson` (an object); its answer is callFinished or callFailed with
  // the id returned here. Calls run in order.
  int call(const QString& tool, const QString& argumentsJson);
  // Stops call `id`: running, it is cancelled (callFailed says so); queued, it never starts.
  void stopCall(int id);

 signals:
  void stateChanged();
  void callFinished(int id, const QString& text, bool isError, bool truncated);
  void callFailed(int id, const QString& sentence);
  void callProgress(int id, double done, double total, const QString& message);

 private:
  void post(std::function<void()> job);  // to the worker thread
  void work();
  void startOnWorker();
  void setClient(std::unique_ptr<pagedchat::mcp::Client> client, pagedchat::mcp::Transport* transport);
  void callOnWorker(int id, const std::string& tool, const std::string& arguments);
  // Runs on this object's thread (from the worker): sets the state the UI reads.
  void publish(State state, QString failure, std::vector<pagedchat::mcp::Tool> tools);

  const pagedchat::mcp::ServerConfig m_config;
  State m_state = State::Off;
  QString m_failure;
  std::vector<pagedchat::mcp::Tool> m_tools;
  int m_nextCall = 1;

  // The worker's side.
  std::unique_ptr<pagedchat::mcp::Client> m_client;  // touched by the worker thread alone
  // Its transport, which the destructor closes (under m_mutex) so that a server hanging in its
  // start or a call does not hold the app's exit for the whole timeout.
  pagedchat::mcp::Transport* m_transport = nullptr;
  std::mutex m_mutex;
  std::condition_variable m_wake;
  std::deque<std::function<void()>> m_jobs;
  bool m_quit = false;
  int m_running = 0;                     // the call in flight (0: none)
  std::vector<int> m_stopped;            // calls stopped before they ran
  std::atomic<bool> m_stopRunning = false;
  std::thread m_worker;
};
