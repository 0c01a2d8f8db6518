#pragma once
// Paths the suites get from ctest's environment (see tests/CMakeLists.txt). A missing one
// fails the test: a suite that silently skipped would prove nothing.

#include <QtTest>

#include <cstdlib>
#include <string>

namespace pagedchat::test {

inline std::string env_path(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// Whether the suite runs in the sanitizer build of the test command (ASan and UBSan at -O1, 4-7
// times slower): a few checks size their inputs by it, or leave out what measures this machine.
inline bool sanitized() { return qEnvironmentVariableIsSet("PAGEDCHAT_SANITIZED"); }

}  // namespace pagedchat::test

// Fetches an environment path into `var` or fails the current test.
#define PC_REQUIRE_ENV(var, name)                                            \
  const std::string var = ::pagedchat::test::env_path(name);                 \
  do {                                                                       \
    if (var.empty()) QFAIL(name " is not set (run the tests through ctest)"); \
  } while (0)
