#pragma once
// UTF-8 helpers shared by the tokenizers: scanning one character with the Unicode rules
// for malformed input (a malformed sequence is replaced by U+FFFD per maximal subpart),
// validation, and encoding/decoding single code points.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace pagedchat {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

enum class Utf8Status { complete, incomplete, invalid };

struct Utf8Step {
  Utf8Status status;
  // complete: bytes of the character; incomplete: bytes seen so far (all plausible);
  // invalid: bytes of the maximal ill-formed subpart, always >= 1.
  size_t len;
};

// Looks at the character starting at s[0] (s must not be empty).
Utf8Step utf8_scan(std::string_view s);

bool is_valid_utf8(std::string_view s);

// Every malformed part replaced by U+FFFD.
std::string sanitize_utf8(std::string_view s);

void append_utf8(std::string& out, uint32_t code_point);

// The length of s without a last character whose bytes have not all come (text streamed a token
// at a time may end inside one); s's length when it ends whole.
size_t whole_utf8_prefix(std::string_view s);

// Decodes the character at s[pos] and advances pos; a malformed byte gives U+FFFD and
// advances by its maximal subpart.
uint32_t next_code_point(std::string_view s, size_t& pos);

}  // namespace pagedchat
