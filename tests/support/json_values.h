#pragma once
// Reading the reference files' JSON (tests/reference, tests/data) into the types the suites compare.

#include <QJsonArray>

#include <cstdint>
#include <vector>

namespace pagedchat::test {

inline std::vector<int32_t> json_ints(const QJsonArray& a) {
  std::vector<int32_t> v;
  v.reserve(static_cast<size_t>(a.size()));
  for (const auto& x : a) v.push_back(x.toInt());
  return v;
}

}  // namespace pagedchat::test
