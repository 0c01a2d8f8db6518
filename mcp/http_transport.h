#pragma once
// An MCP server at a URL, over the protocol's Streamable HTTP transport: each message the
// client sends is a POST; the server answers a request with one JSON body or with a stream of
// server-sent events (its notifications and requests, then the reply), and a notification with
// 202. The session id the server gives at initialize (Mcp-Session-Id) goes with every later POST,
// and close() ends the session (DELETE). Each POST runs on a thread of its own, so replies and
// progress arrive while the client waits, and a cancellation can be sent while a call streams.
// Headers from the configuration (a bearer token) go with every request; they are never logged.
// Not built: the optional GET stream for messages the server sends unasked.

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mcp/message_queue.h"
#include "mcp/transport.h"

namespace pagedchat::mcp {

struct HttpEndpoint {
  std::string url;
  std::map<std::string, std::string> headers;
  long connect_timeout_s = 10;
};

class HttpTransport final : public Transport {
 public:
  HttpTransport(std::string server_name, HttpEndpoint endpoint, const Limits& limits);
  ~HttpTransport() override;
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  bool send(const std::string& message) override;
  std::optional<std::string> receive(Clock::time_point deadline) override;
  bool failed() const override;
  Error failure() const override;
  void close() override;

  std::string session_id() const;

 private:
  void post(std::string body);          // one POST, on its own thread
  void deliver(std::string message);    // a message the server sent, to the queue
  void fail(ErrorKind kind, std::string sentence);

  const std::string name_;
  const HttpEndpoint endpoint_;
  const Limits limits_;
  std::atomic<bool> closing_ = false;

  MessageQueue queue_;
  mutable std::mutex mutex_;  // the state below
  std::string session_id_;
  struct PostThread {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::vector<PostThread> posts_;
  bool closed_ = false;
};

}  // namespace pagedchat::mcp
