#pragma once
// ASCII case and space for protocol text (HTTP header names and values, hex digests), where
// the locale must not matter: shared by models/'s downloads and mcp/'s HTTP transport.

#include <cctype>
#include <string>

namespace pagedchat {

inline std::string ascii_lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Without leading and trailing whitespace.
inline std::string trim_space(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

}  // namespace pagedchat
