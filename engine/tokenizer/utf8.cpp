// UTF-8 scanning, validation and the stream decoder that never splits a character.

#include "engine/tokenizer/utf8.h"

#include "engine/tokenizer/tokenizer.h"

namespace pagedchat {

namespace {

// Allowed range of the second byte after a lead byte (Unicode Table 3-7); the rest are 80..BF.
// This excludes overlong forms, surrogates and code points above U+10FFFF.
struct LeadInfo {
  int len;         // 0 when the byte cannot start a character
  uint8_t lo, hi;  // range of the second byte
};

LeadInfo lead_info(uint8_t b) {
  if (b < 0x80) return {1, 0, 0};
  if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) return {3, 0x80, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

}  // namespace

Utf8Step utf8_scan(std::string_view s) {
  const auto b0 = static_cast<uint8_t>(s[0]);
  const LeadInfo info = lead_info(b0);
  if (info.len == 0) return {Utf8Status::invalid, 1};
  if (info.len == 1) return {Utf8Status::complete, 1};
  for (int k = 1; k < info.len; ++k) {
    if (static_cast<size_t>(k) >= s.size()) return {Utf8Status::incomplete, static_cast<size_t>(k)};
    const auto b = static_cast<uint8_t>(s[k]);
    const uint8_t lo = k == 1 ? info.lo : 0x80;
    const uint8_t hi = k == 1 ? info.hi : 0xBF;
    if (b < lo || b > hi) return {Utf8Status::invalid, static_cast<size_t>(k)};
  }
  return {Utf8Status::complete, static_cast<size_t>(info.len)};
}

bool is_valid_utf8(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    const Utf8Step step = utf8_scan(s.substr(pos));
    if (step.status != Utf8Status::complete) return false;
    pos += step.len;
  }
  return true;
}

std::string sanitize_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) {
    const Utf8Step step = utf8_scan(s.substr(pos));
    if (step.status == Utf8Status::complete)
      out.append(s.substr(pos, step.len));
    else
      out.append(kReplacementChar);
    pos += step.len;
  }
  return out;
}

size_t whole_utf8_prefix(std::string_view s) {
  size_t lead = s.size();
  // The last character's first byte: at most three continuation bytes back.
  while (lead > 0 && s.size() - lead < 3 && (static_cast<unsigned char>(s[lead - 1]) & 0xC0) == 0x80) --lead;
  if (lead == 0) return s.size();
  return utf8_scan(s.substr(lead - 1)).status == Utf8Status::incomplete ? lead - 1 : s.size();
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x110000) {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.append(kReplacementChar);
  }
}

uint32_t next_code_point(std::string_view s, size_t& pos) {
  const Utf8Step step = utf8_scan(s.substr(pos));
  if (step.status != Utf8Status::complete) {
    pos += step.len;
    return 0xFFFD;
  }
  const auto* p = reinterpret_cast<const uint8_t*>(s.data() + pos);
  pos += step.len;
  switch (step.len) {
    case 1:
      return p[0];
    case 2:
      return ((p[0] & 0x1Fu) << 6) | (p[1] & 0x3Fu);
    case 3:
      return ((p[0] & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
    default:
      return ((p[0] & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) |
             (p[3] & 0x3Fu);
  }
}

// ---- Utf8StreamDecoder ----------------------------------------------------------------------

std::string Utf8StreamDecoder::push(std::string_view bytes) {
  pending_.append(bytes);
  std::string out;
  size_t pos = 0;
  while (pos < pending_.size()) {
    const Utf8Step step = utf8_scan(std::string_view(pending_).substr(pos));
    // An unfinished character may still be completed by the next piece: hold it back.
    if (step.status == Utf8Status::incomplete) break;
    if (step.status == Utf8Status::complete)
      out.append(pending_, pos, step.len);
    else
      out.append(kReplacementChar);  // can never become valid, whatever follows
    pos += step.len;
  }
  pending_.erase(0, pos);
  return out;
}

std::string Utf8StreamDecoder::flush() {
  // Whatever is left is an unfinished character: the stream ended inside it.
  std::string out = pending_.empty() ? std::string() : sanitize_utf8(pending_);
  pending_.clear();
  return out;
}

}  // namespace pagedchat
