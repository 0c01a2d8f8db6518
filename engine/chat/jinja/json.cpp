// Hugging Face's tojson: Python's json.dumps(value, ensure_ascii=False, indent, sort_keys).
#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "engine/chat/jinja/builtins.h"
#include "engine/common/error.h"

namespace pagedchat::jinja {
namespace {

void escape_code_unit(std::string& out, unsigned u) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\u%04x", u);
  out += buf;
}

void quote(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          escape_code_unit(out, c);
        } else if (c >= 0x80 && ensure_ascii) {
          // \uXXXX per UTF-16 code unit, as Python writes it.
          const size_t n = (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
          uint32_t cp = n == 1 ? c : c & (0x7F >> n);
          for (size_t k = 1; k < n && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
          i += n - 1;
          if (cp >= 0x10000) {
            cp -= 0x10000;
            escape_code_unit(out, 0xD800 + (cp >> 10));
            escape_code_unit(out, 0xDC00 + (cp & 0x3FF));
          } else {
            escape_code_unit(out, cp);
          }
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void dump(std::string& out, const Value& v, const JsonStyle& style, int depth) {
  if (depth > 200) throw Error("tojson: nested deeper than 200");
  const int indent = style.indent;
  auto newline = [&](int d) {
    if (indent < 0) return;
    out += '\n';
    out.append(static_cast<size_t>(indent * d), ' ');
  };
  const std::string item_sep = !style.item_separator.empty() ? style.item_separator : indent < 0 ? ", " : ",";
  const std::string key_sep = !style.key_separator.empty() ? style.key_separator : ": ";
  if (v.is_none()) {
    out += "null";
  } else if (v.is_bool()) {
    out += v.as_bool() ? "true" : "false";
  } else if (v.is_int()) {
    out += std::to_string(v.as_int());
  } else if (v.is_float()) {
    const std::string r = python_float_repr(v.as_double());
    out += r == "nan" ? "NaN" : r == "inf" ? "Infinity" : r == "-inf" ? "-Infinity" : r;
  } else if (v.is_string()) {
    quote(out, v.str_bytes(), style.ensure_ascii);
  } else if (v.is_list()) {
    const List& l = v.as_list();
    if (l.empty()) {
      out += "[]";
      return;
    }
    out += '[';
    for (size_t i = 0; i < l.size(); ++i) {
      if (i) out += item_sep;
      newline(depth + 1);
      dump(out, l[i], style, depth + 1);
    }
    newline(depth);
    out += ']';
  } else if (v.is_dict() && !v.as_dict().is_namespace) {
    std::vector<const std::pair<PromptText, Value>*> entries;
    for (const auto& e : v.as_dict().entries) entries.push_back(&e);
    if (style.sort_keys)
      std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first.str() < b->first.str(); });
    if (entries.empty()) {
      out += "{}";
      return;
    }
    out += '{';
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i) out += item_sep;
      newline(depth + 1);
      quote(out, entries[i]->first.str(), style.ensure_ascii);
      out += key_sep;
      dump(out, entries[i]->second, style, depth + 1);
    }
    newline(depth);
    out += '}';
  } else {
    throw Error(format("Object of type %s is not JSON serializable", v.type_name()));
  }
}

}  // namespace

std::string to_json(const Value& v, const JsonStyle& style) {
  std::string out;
  dump(out, v, style, 0);
  return out;
}

}  // namespace pagedchat::jinja
