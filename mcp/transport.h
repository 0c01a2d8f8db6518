#pragma once
// How an MCP client reaches its server: one JSON-RPC message at a time each way. Two kinds: a
// child process over stdio (stdio_transport.h) and Streamable HTTP (later). A transport that
// fails stays failed; failure() says why, as a sentence.

#include <chrono>
#include <optional>
#include <string>

#include "mcp/mcp_types.h"

namespace pagedchat::mcp {

class Transport {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~Transport() = default;
  // Sends one message (compact JSON). False when the server can no longer take it.
  virtual bool send(const std::string& message) = 0;
  // The next message the server sent, waiting until `deadline`; nullopt on timeout or failure.
  virtual std::optional<std::string> receive(Clock::time_point deadline) = 0;
  virtual bool failed() const = 0;
  virtual Error failure() const = 0;
  // Ends the connection (a child process is asked to exit, then made to). Idempotent.
  virtual void close() = 0;
};

}  // namespace pagedchat::mcp
