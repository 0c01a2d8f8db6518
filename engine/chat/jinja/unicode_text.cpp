// Unicode case and classes for the template's strings (see unicode_text.h). Malformed UTF-8
// reads as U+FFFD, as the tokenizers read it.
#include "engine/chat/jinja/unicode_text.h"

#include <cwctype>
#include <locale>
#include <vector>

#include "engine/tokenizer/utf8.h"

namespace pagedchat::jinja {
namespace {

const std::ctype<wchar_t>* wide_table() {
  static const std::ctype<wchar_t>* table = []() -> const std::ctype<wchar_t>* {
    try {
      static const std::locale utf8("C.UTF-8");
      return &std::use_facet<std::ctype<wchar_t>>(utf8);
    } catch (const std::exception&) {
      return nullptr;
    }
  }();
  return table;
}

std::u32string decode(std::string_view s) {
  std::u32string out;
  for (size_t i = 0; i < s.size();) out.push_back(next_code_point(s, i));
  return out;
}

std::string encode(const std::u32string& cps) {
  std::string out;
  for (char32_t cp : cps) append_utf8(out, cp);
  return out;
}

char32_t upper(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
  const auto* t = wide_table();
  return t ? static_cast<char32_t>(t->toupper(static_cast<wchar_t>(c))) : c;
}

char32_t lower(char32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  const auto* t = wide_table();
  return t ? static_cast<char32_t>(t->tolower(static_cast<wchar_t>(c))) : c;
}

bool is_cased(char32_t c) { return upper(c) != c || lower(c) != c; }

bool is_word(char32_t c) {
  if (c < 0x80) return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  const auto* t = wide_table();
  return t ? t->is(std::ctype_base::alnum, static_cast<wchar_t>(c)) : true;
}

}  // namespace

std::string utf8_upper(std::string_view s) {
  std::u32string cps = decode(s);
  for (char32_t& c : cps) c = upper(c);
  return encode(cps);
}

std::string utf8_lower(std::string_view s) {
  std::u32string cps = decode(s);
  for (char32_t& c : cps) c = lower(c);
  return encode(cps);
}

std::string utf8_title(std::string_view s) {
  std::u32string cps = decode(s);
  bool prev_cased = false;
  for (char32_t& c : cps) {
    const bool cased = is_cased(c);
    c = prev_cased ? lower(c) : upper(c);
    prev_cased = cased;
  }
  return encode(cps);
}

std::string utf8_capitalize(std::string_view s) {
  std::u32string cps = decode(s);
  for (size_t i = 0; i < cps.size(); ++i) cps[i] = i == 0 ? upper(cps[i]) : lower(cps[i]);
  return encode(cps);
}

bool utf8_is_upper(std::string_view s) {
  bool cased = false;
  for (char32_t c : decode(s)) {
    if (lower(c) != c) cased = true;
    else if (upper(c) != c) return false;
  }
  return cased;
}

bool utf8_is_lower(std::string_view s) {
  bool cased = false;
  for (char32_t c : decode(s)) {
    if (upper(c) != c) cased = true;
    else if (lower(c) != c) return false;
  }
  return cased;
}

size_t utf8_word_count(std::string_view s) {
  size_t n = 0;
  bool in_word = false;
  for (char32_t c : decode(s)) {
    const bool w = is_word(c);
    n += w && !in_word;
    in_word = w;
  }
  return n;
}

}  // namespace pagedchat::jinja
