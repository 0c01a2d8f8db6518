#pragma once
// A Model Context Protocol client session over one transport: the lifecycle (initialize, then
// notifications/initialized), tools/list over every page, tools/call with progress and
// cancellation, ping both ways, and the server's notifications (tools/list_changed). Blocking and
// for one thread at a time (the app runs each server's session on a worker thread); `stop` is
// the one thing another thread may touch. Every failure is an Error with a sentence naming the
// server; every message is held to Limits.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mcp/mcp_types.h"
#include "mcp/transport.h"

namespace pagedchat::mcp {

// The protocol revision this client asks for, and the ones it accepts from a server.
inline constexpr const char* kProtocolVersion = "2025-06-18";
bool supported_protocol_version(const std::string& version);

class Client {
 public:
  Client(std::string server_name, std::unique_ptr<Transport> transport, Limits limits = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // initialize and notifications/initialized. Nothing else works before it succeeds.
  Error start();
  const ServerInfo& server() const { return server_; }

  // The server's tools, every page of them (at most Limits::max_tools).
  Error list_tools(std::vector<Tool>* tools);
  // Whether the server said its tools changed since the last list_tools.
  bool tools_changed() const { return tools_changed_; }

  struct CallOptions {
    double timeout_s = 0;                      // 0: Limits::call_timeout_s
    const std::atomic<bool>* stop = nullptr;   // set by another thread: the call is cancelled
    // notifications/progress for this call: progress, total (0 when unknown), message.
    std::function<void(double, double, const std::string&)> on_progress;
  };
  // tools/call with `arguments_json` (an object). A tool that ran and failed is not an Error:
  // its result has is_error set. On timeout or stop the server is sent notifications/cancelled.
  Error call_tool(const std::string& name, const std::string& arguments_json, ToolResult* result,
                  const CallOptions& options);
  Error ping();

  // Ends the session and the server (a child process is stopped). Idempotent.
  void close();
  const std::string& name() const { return name_; }

 private:
  struct Reply;
  Error request(const std::string& method, const std::string& params_json, double timeout_s,
                const std::atomic<bool>* stop, const std::function<void(double, double, const std::string&)>* progress,
                std::string* result_json);
  void handle_incoming(const std::string& text, int64_t waiting_for, Reply* reply,
                       const std::function<void(double, double, const std::string&)>* progress);
  Error transport_error(const std::string& what) const;

  std::string name_;
  std::unique_ptr<Transport> transport_;
  Limits limits_;
  ServerInfo server_;
  bool started_ = false;
  bool tools_changed_ = false;
  int64_t next_id_ = 1;
  std::string last_junk_;  // the last line that was not JSON-RPC, for the failure sentence
  int64_t junk_lines_ = 0;
};

}  // namespace pagedchat::mcp
