#pragma once
// Internal to mcp/: the messages a transport's reader threads took in, waiting for the client,
// and the transport's failure, the first one kept. What arrived before a failure is still
// delivered (a reply, then the exit).

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>

#include "mcp/mcp_types.h"

namespace pagedchat::mcp {

class MessageQueue {
 public:
  using Clock = std::chrono::steady_clock;

  void push(std::string message) {
    std::lock_guard lock(mutex_);
    messages_.push_back(std::move(message));
    arrived_.notify_all();
  }
  void fail(Error error) {
    std::lock_guard lock(mutex_);
    if (error_.ok()) error_ = std::move(error);
    arrived_.notify_all();
  }
  // The next message, waiting until `deadline`; nullopt on timeout, or on failure once drained.
  std::optional<std::string> pop(Clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    arrived_.wait_until(lock, deadline, [&] { return !messages_.empty() || !error_.ok(); });
    if (messages_.empty()) return std::nullopt;
    std::string m = std::move(messages_.front());
    messages_.pop_front();
    return m;
  }
  bool failed() const {  // failed, and nothing left to read
    std::lock_guard lock(mutex_);
    return !error_.ok() && messages_.empty();
  }
  Error failure() const {
    std::lock_guard lock(mutex_);
    return error_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable arrived_;
  std::deque<std::string> messages_;
  Error error_;
};

}  // namespace pagedchat::mcp
