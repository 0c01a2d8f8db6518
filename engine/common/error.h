#pragma once
// The engine's one exception type. Errors from input (a file, a user, a client) are thrown
// with the context that names the cause, and caught once at the API boundary (CLI, bridge).
// Asserts are kept for our own bugs.

#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>

namespace pagedchat {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// format("tensor '%s' at offset %llu", name, off): printf-style message building.
template <typename... Args>
std::string format(const char* fmt, Args&&... args) {
  int n = std::snprintf(nullptr, 0, fmt, args...);
  if (n <= 0) return fmt;
  std::string s(static_cast<size_t>(n) + 1, '\0');
  std::snprintf(s.data(), s.size(), fmt, args...);
  s.resize(static_cast<size_t>(n));
  return s;
}

template <typename... Args>
[[noreturn]] void fail(const char* fmt, Args&&... args) {
  throw Error(format(fmt, std::forward<Args>(args)...));
}

}  // namespace pagedchat
