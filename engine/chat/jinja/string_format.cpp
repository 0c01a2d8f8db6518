// Python's two string formattings as templates use them: "%s-%05.2f" % (a, b) (and jinja2's
// format filter, which is the same) and "{} {:>5}".format(a, b), with the format-spec
// mini-language's common parts. Pieces of the format keep their provenance; an argument's text
// goes in as the argument was (a message's text stays text).
#include <cmath>
#include <cstdio>

#include "engine/chat/jinja/builtins.h"
#include "engine/chat/jinja/code_points.h"
#include "engine/common/error.h"

namespace pagedchat::jinja {
namespace {

struct Spec {
  char fill = ' ';
  char align = '\0';  // < > ^ =, or none
  char sign = '-';
  bool alternate = false;
  bool zero = false;
  int width = -1;
  int precision = -1;
  char type = '\0';
};

// Pads `s` (its characters counted as code points) to the spec's width.
PromptText pad(PromptText s, const Spec& spec, char default_align) {
  const int n = static_cast<int>(num_code_points(s.str()));
  if (spec.width <= n) return s;
  const int total = spec.width - n;
  const char align = spec.align ? spec.align : default_align;
  const int left = align == '>' ? total : align == '^' ? total / 2 : 0;
  PromptText out;
  out.markup(std::string(static_cast<size_t>(left), spec.fill)).append(s);
  out.markup(std::string(static_cast<size_t>(total - left), spec.fill));
  return out;
}

std::string number_text(const Value& v, const Spec& spec, const char* what) {
  if (!v.is_number()) throw Error(format("%s: a number is required, not '%s'", what, v.type_name()));
  std::string flags;
  if (spec.sign == '+' || spec.sign == ' ') flags += spec.sign;
  if (spec.alternate) flags += '#';
  char type = spec.type;
  char buf[512];
  if (type == 'd' || type == 'i' || type == 'x' || type == 'X' || type == 'o' || type == 'b') {
    const int64_t i = v.is_float() ? static_cast<int64_t>(v.as_double()) : v.as_int();
    std::string s = i < 0 ? "-" : spec.sign == '+' || spec.sign == ' ' ? std::string(1, spec.sign) : "";
    if (type == 'd' || type == 'i') return s + std::to_string(i < 0 ? -static_cast<uint64_t>(i) : static_cast<uint64_t>(i));
    // Python writes a magnitude with its sign (-0x1f, not two's complement) and '#' as 0x / 0X / 0o / 0b.
    uint64_t u = i < 0 ? -static_cast<uint64_t>(i) : static_cast<uint64_t>(i);
    if (spec.alternate) {
      s += '0';
      s += type;
    }
    if (type == 'b') {
      std::string bits;
      do {
        bits.insert(bits.begin(), static_cast<char>('0' + (u & 1)));
        u >>= 1;
      } while (u);
      return s + bits;
    }
    std::snprintf(buf, sizeof buf, type == 'o' ? "%llo" : type == 'x' ? "%llx" : "%llX", static_cast<unsigned long long>(u));
    return s + buf;
  }
  if (type == '\0') type = v.is_float() ? 'r' : 'd';
  if (type == 'r') return v.is_float() ? python_float_repr(v.as_double()) : std::to_string(v.as_int());
  if (std::string_view("fFeEgG%").find(type) == std::string_view::npos)
    throw Error(format("%s: the conversion '%c' is not supported", what, type));
  double d = v.as_double();
  const int precision = spec.precision >= 0 ? spec.precision : 6;
  if (type == '%') d *= 100;
  const std::string f = "%" + flags + "." + std::to_string(precision) + (type == '%' ? 'f' : type);
  std::snprintf(buf, sizeof buf, f.c_str(), d);
  return std::string(buf) + (type == '%' ? "%" : "");
}

// A number padded with zeros goes between its sign and its digits.
std::string zero_pad(std::string s, int width) {
  const int n = static_cast<int>(s.size());
  if (width <= n) return s;
  const size_t at = (!s.empty() && (s[0] == '-' || s[0] == '+' || s[0] == ' ')) ? 1 : 0;
  s.insert(at, static_cast<size_t>(width - n), '0');
  return s;
}

// [[fill]align][sign][#][0][width][.precision][type]
Spec parse_spec(std::string_view s) {
  Spec spec;
  size_t i = 0;
  auto is_align = [](char c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  if (s.size() >= 2 && is_align(s[1])) {
    spec.fill = s[0];
    spec.align = s[1];
    i = 2;
  } else if (!s.empty() && is_align(s[0])) {
    spec.align = s[0];
    i = 1;
  }
  if (i < s.size() && (s[i] == '+' || s[i] == '-' || s[i] == ' ')) spec.sign = s[i++];
  if (i < s.size() && s[i] == '#') {
    spec.alternate = true;
    ++i;
  }
  if (i < s.size() && s[i] == '0') {
    spec.zero = true;
    ++i;
  }
  int w = -1;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') w = (w < 0 ? 0 : w * 10) + (s[i++] - '0');
  spec.width = std::min(w, 4096);
  if (i < s.size() && s[i] == '.') {
    int p = 0;
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') p = p * 10 + (s[i++] - '0');
    spec.precision = std::min(p, 400);
  }
  if (i < s.size()) spec.type = s[i++];
  if (i != s.size()) throw Error("format(): the format spec '" + std::string(s) + "' is not supported");
  return spec;
}

PromptText format_with_spec(const Value& v, std::string_view spec_text) {
  if (spec_text.empty()) return v.to_text();
  const Spec spec = parse_spec(spec_text);
  if (v.is_string() && (spec.type == '\0' || spec.type == 's')) {
    PromptText s = v.as_string();
    if (spec.precision >= 0) {
      const std::vector<size_t> at = code_point_offsets(s.str());
      if (static_cast<size_t>(spec.precision) + 1 < at.size()) s = s.slice(0, at[spec.precision]);
    }
    return pad(s, spec, '<');
  }
  std::string n = number_text(v, spec, "format()");
  if (spec.zero && !spec.align) return PromptText().markup(zero_pad(n, spec.width));
  return pad(PromptText().markup(n), spec, '>');
}

}  // namespace

PromptText percent_format(const PromptText& fmt, const Value& args) {
  const std::string& f = fmt.str();
  List positional;
  const Dict* mapping = nullptr;
  if (args.is_tuple()) positional = args.as_list();
  else if (args.is_dict()) mapping = &args.as_dict();
  else positional.push_back(args);
  PromptText out;
  size_t next = 0;
  size_t literal_from = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%') continue;
    out.append(fmt.slice(literal_from, i));
    size_t j = i + 1;
    if (j >= f.size()) throw Error("format: incomplete format (a '%' at the end)");
    if (f[j] == '%') {
      out.markup("%");
      literal_from = i = j;
      ++literal_from;
      continue;
    }
    Value arg;
    if (f[j] == '(') {
      const size_t close = f.find(')', j);
      if (close == std::string::npos || !mapping) throw Error("format: '%(name)' needs a mapping");
      const Value* v = mapping->find(std::string_view(f).substr(j + 1, close - j - 1));
      if (!v) throw Error("format: no key '" + f.substr(j + 1, close - j - 1) + "'");
      arg = *v;
      j = close + 1;
    } else {
      if (next >= positional.size()) throw Error("format: not enough arguments for format string");
      arg = positional[next++];
    }
    Spec spec;
    for (; j < f.size() && std::string_view("-+ #0").find(f[j]) != std::string_view::npos; ++j) {
      if (f[j] == '-') spec.align = '<';
      else if (f[j] == '0') spec.zero = true;
      else if (f[j] == '#') spec.alternate = true;
      else spec.sign = f[j];
    }
    int w = -1;
    for (; j < f.size() && f[j] >= '0' && f[j] <= '9'; ++j) w = (w < 0 ? 0 : w * 10) + (f[j] - '0');
    spec.width = std::min(w, 4096);
    if (j < f.size() && f[j] == '.') {
      int p = 0;
      for (++j; j < f.size() && f[j] >= '0' && f[j] <= '9'; ++j) p = p * 10 + (f[j] - '0');
      spec.precision = std::min(p, 400);
    }
    if (j >= f.size()) throw Error("format: incomplete format");
    spec.type = f[j];
    PromptText piece;
    if (spec.type == 's' || spec.type == 'r' || spec.type == 'a') {
      piece = spec.type == 's' ? arg.to_text() : holds_data(arg) ? PromptText().text(arg.repr()) : PromptText().markup(arg.repr());
      if (spec.precision >= 0) {
        const std::vector<size_t> at = code_point_offsets(piece.str());
        if (static_cast<size_t>(spec.precision) + 1 < at.size()) piece = piece.slice(0, at[spec.precision]);
      }
      piece = pad(piece, spec, '>');
    } else if (spec.type == 'c') {
      piece = arg.is_string() ? arg.as_string() : PromptText().markup(std::string(1, static_cast<char>(arg.as_int())));
    } else {
      if (spec.type == 'u') spec.type = 'd';
      std::string n = number_text(arg, spec, "format");
      if (spec.zero && spec.align != '<') piece.markup(zero_pad(n, spec.width));
      else piece = pad(PromptText().markup(n), spec, '>');
    }
    out.append(piece);
    i = j;
    literal_from = j + 1;
  }
  out.append(fmt.slice(literal_from, f.size()));
  if (next < positional.size() && !args.is_dict() && (args.is_tuple() || positional.size() > 1))
    throw Error("format: not all arguments converted during string formatting");
  return out;
}

PromptText str_format(const PromptText& fmt, const CallArgs& args) {
  const std::string& f = fmt.str();
  PromptText out;
  size_t next_auto = 0;
  size_t lit_from = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    if ((f[i] == '{' || f[i] == '}') && i + 1 < f.size() && f[i + 1] == f[i]) {  // {{ and }}
      out.append(fmt.slice(lit_from, i + 1));
      lit_from = ++i + 1;
      continue;
    }
    if (f[i] != '{') continue;
    const size_t close = f.find('}', i);
    if (close == std::string::npos) throw Error("format(): a '{' is never closed");
    out.append(fmt.slice(lit_from, i));
    std::string field = f.substr(i + 1, close - i - 1);
    std::string spec;
    if (const size_t colon = field.find(':'); colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field.resize(colon);
    }
    if (field.find('!') != std::string::npos) throw Error("format(): conversions ('{x!r}') are not supported");
    Value v;
    if (field.empty()) v = args.get(next_auto++, "");
    else if (field[0] >= '0' && field[0] <= '9') v = args.get(std::stoul(field), "");
    else v = args.get(static_cast<size_t>(-1), field);
    if (v.is_undefined()) throw Error("format(): no argument for '{" + field + "}'");
    out.append(format_with_spec(v, spec));
    lit_from = close + 1;
    i = close;
  }
  out.append(fmt.slice(lit_from, f.size()));
  return out;
}

}  // namespace pagedchat::jinja
