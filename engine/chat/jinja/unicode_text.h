#pragma once
// Python's Unicode-aware string operations on UTF-8: case mapping, and the character classes
// str.isupper() / \w need. Mapped through the C.UTF-8 locale's wide-character table (one code
// point to one: 'ß'.upper() stays 'ß' where Python gives 'SS'); ASCII only if that locale is absent.

#include <string>
#include <string_view>

namespace pagedchat::jinja {

std::string utf8_upper(std::string_view s);
std::string utf8_lower(std::string_view s);
// Python's str.title() (upper after an uncased character) and str.capitalize().
std::string utf8_title(std::string_view s);
std::string utf8_capitalize(std::string_view s);
// str.isupper() / str.islower(): some cased character, and none of the other case.
bool utf8_is_upper(std::string_view s);
bool utf8_is_lower(std::string_view s);
// Python's re \w+ runs (jinja2's wordcount).
size_t utf8_word_count(std::string_view s);

}  // namespace pagedchat::jinja
