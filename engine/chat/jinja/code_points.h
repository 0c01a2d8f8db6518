#pragma once
// Python indexes strings by code point, we store UTF-8: the byte offset of each code point.

#include <cstddef>
#include <string_view>
#include <vector>

namespace pagedchat::jinja {

// Offsets of each code point's first byte, then s.size(): n code points give n + 1 offsets.
inline std::vector<size_t> code_point_offsets(std::string_view s) {
  std::vector<size_t> at;
  at.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size(); ++i)
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) at.push_back(i);
  at.push_back(s.size());
  return at;
}

inline size_t num_code_points(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

}  // namespace pagedchat::jinja
