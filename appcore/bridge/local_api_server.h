#pragma once
// The app's local API server: the OpenAI-compatible ApiServer (server/) on a thread of its
// own, submitting through the EngineBridge's RequestRouter, so its requests run on the app's
// engine, batch with the chats and show in the block-pool view. The HTTP side has its own
// thread so that parsing and tokenizing large requests never stalls the widgets.

#include <QObject>
#include <QString>
#include <QThread>
#include <QVector>

#include <functional>
#include <memory>

#include "server/api/api_server.h"

class RequestRouter;

class LocalApiServer : public QObject {
  Q_OBJECT
 public:
  LocalApiServer(std::shared_ptr<RequestRouter> router, QObject* parent = nullptr);
  ~LocalApiServer() override;

  // Starts listening (asynchronously): then started(url) or failed(error). A running server
  // is stopped first.
  void start(const ServerOptions& options);
  // Stops at once: requests in flight are aborted, their blocks freed at the next step.
  void stop();
  // Stops gracefully (a SIGTERM to the app): ApiServer::shutdown, whose requests in flight may
  // finish for up to graceMs and whose streams end with [DONE] either way; then stops and calls
  // `done` on this object's thread. At once when not running.
  void shutdown(int graceMs, std::function<void()> done);
  bool isRunning() const { return m_server != nullptr; }
  QString url() const { return m_url; }  // "http://127.0.0.1:8080/v1" while running
  // The request log: the last kLogLength requests served since the app started, oldest first.
  static constexpr int kLogLength = 500;
  const QVector<ApiLogEntry>& log() const { return m_log; }

 signals:
  void started(const QString& url);
  void failed(const QString& error);
  void requestLogged(const ApiLogEntry& entry);  // appended to log()

 private:
  void stopServer();  // stop() without calling a pending shutdown's `done`

  std::shared_ptr<RequestRouter> m_router;
  QThread m_thread;
  ApiServer* m_server = nullptr;  // lives on m_thread
  // shutdown()'s `done`, until it runs: when the drain ends, or when stop() ends the server first
  // (the API switched off meanwhile), so that the app's SIGTERM is never lost.
  std::function<void()> m_shutdownDone;
  QString m_url;
  QVector<ApiLogEntry> m_log;
};
