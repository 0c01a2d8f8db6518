#pragma once
// An MCP server as a child process that the client starts and owns, speaking newline-delimited
// JSON-RPC on its stdin and stdout (the protocol's stdio transport). Its stderr is kept (the last
// few KB) to say why it failed. close() closes its stdin, then sends SIGTERM to its process group,
// then SIGKILL: a server never outlives its client.

#include <sys/types.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mcp/message_queue.h"
#include "mcp/transport.h"

namespace pagedchat::mcp {

struct StdioCommand {
  std::string command;                      // found on PATH when it has no '/'
  std::vector<std::string> args;
  std::map<std::string, std::string> env;   // added to (or replacing in) the app's environment
};

class StdioTransport final : public Transport {
 public:
  // Starts the process; a failure to start is failed() at once (spawn_failed).
  StdioTransport(std::string server_name, const StdioCommand& command, const Limits& limits);
  ~StdioTransport() override;
  StdioTransport(const StdioTransport&) = delete;
  StdioTransport& operator=(const StdioTransport&) = delete;

  bool send(const std::string& message) override;
  std::optional<std::string> receive(Clock::time_point deadline) override;
  bool failed() const override;
  Error failure() const override;
  void close() override;

  pid_t pid() const { return pid_; }

 private:
  void read_stdout();
  void read_stderr();
  std::string exit_sentence();                        // with mutex_ held: how the process ended
  bool reap(int wait_ms);                             // waits up to wait_ms for the exit status
  void fail_exited();                                 // the process is gone: says how, once

  const std::string name_;
  const Limits limits_;
  pid_t pid_ = -1;
  int stdin_fd_ = -1, stdout_fd_ = -1, stderr_fd_ = -1;
  std::thread stdout_reader_, stderr_reader_;

  MessageQueue queue_;
  std::mutex mutex_;  // the process's state below
  std::condition_variable stderr_ended_;
  bool reaped_ = false;
  int wait_status_ = 0;
  std::string stderr_tail_;
  bool stderr_done_ = false;  // the child's stderr reached its end
  bool closed_ = false;
};

}  // namespace pagedchat::mcp
