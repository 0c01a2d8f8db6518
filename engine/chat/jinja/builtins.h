#pragma once
// What a template can do to a value: jinja2's filters and tests, the Python methods chat
// templates call on strings, lists and dicts (.strip(), .split(), .items(), .get(), ...),
// attribute and item lookup, slicing, and Hugging Face's tojson. Each throws Error naming the
// construct when a value does not support it.

#include <optional>
#include <string>
#include <string_view>

#include "engine/chat/jinja/value.h"

namespace pagedchat::jinja {

bool is_known_filter(std::string_view name);
bool is_known_test(std::string_view name);

Value apply_filter(std::string_view name, const Value& subject, const CallArgs& args);
bool apply_test(std::string_view name, const Value& subject, const CallArgs& args);

// obj.name: a dict's key (or its method: items, keys, values, get), a string's or list's method
// bound to it, a namespace's attribute; undefined where there is none.
Value attribute_of(const Value& obj, std::string_view name);
// obj[key]: a dict's key, a list's or string's index (negative from the end); undefined where
// there is none.
Value item_of(const Value& obj, const Value& key);
// obj[start:stop:step] of a list or string, Python's rules.
Value slice_of(const Value& obj, std::optional<int64_t> start, std::optional<int64_t> stop,
               std::optional<int64_t> step);

// Python's json.dumps as Hugging Face's tojson filter calls it.
struct JsonStyle {
  int indent = -1;  // none: one line; else newlines and this many spaces a level
  bool ensure_ascii = false;
  bool sort_keys = false;
  std::string item_separator, key_separator;  // empty: json.dumps's defaults for the indent
};
std::string to_json(const Value& v, const JsonStyle& style);

// "%s-%05.2f" % args: a tuple's items, a dict's keys for %(name)s, or one value.
PromptText percent_format(const PromptText& fmt, const Value& args);
// "{} {0} {name:>5}".format(...), with the format-spec mini-language's common parts.
PromptText str_format(const PromptText& fmt, const CallArgs& args);

// Python's len(): code points of a string, items of a list or dict.
size_t length_of(const Value& v);
// The items a for loop walks: a list's items, a dict's keys, a string's characters.
List iterate(const Value& v);

}  // namespace pagedchat::jinja
