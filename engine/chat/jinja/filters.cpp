// jinja2's filters, the ones chat templates use (see builtins.h), with their arguments' names
// and defaults as jinja2 3.1 has them.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <utility>

#include "engine/chat/jinja/builtins.h"
#include "engine/chat/jinja/code_points.h"
#include "engine/chat/jinja/unicode_text.h"
#include "engine/common/error.h"

namespace pagedchat::jinja {

namespace {
// The most a width argument (center, indent) pads with, as string formatting caps its widths:
// center(2e9) would otherwise build 2 GB before any other bound could see it.
constexpr int64_t kMaxPad = 4096;

using Filter = Value (*)(const Value&, const CallArgs&);

std::string need_string(const Value& v, const char* filter) {
  if (!v.is_string()) throw Error(format("the filter '%s' needs a string, not '%s'", filter, v.type_name()));
  return v.str_bytes();
}

Value call_method(const Value& obj, const char* method, CallArgs args = {}) {
  return attribute_of(obj, method).as_function().call(args);
}

// attribute='a.b' lookups (and a number for a list index), as jinja2's make_attrgetter.
Value attribute_path(const Value& v, const Value& path) {
  if (path.is_int()) return item_of(v, path);
  Value cur = v;
  const std::string& p = path.str_bytes();
  size_t i = 0;
  while (i <= p.size()) {
    size_t dot = p.find('.', i);
    if (dot == std::string::npos) dot = p.size();
    const std::string part = p.substr(i, dot - i);
    if (!part.empty() && std::all_of(part.begin(), part.end(), ::isdigit)) cur = item_of(cur, Value(static_cast<int64_t>(std::stoll(part))));
    else cur = cur.is_undefined() ? cur : item_of(cur, Value::markup(part));
    i = dot + 1;
  }
  return cur;
}

// For sort and unique: strings lowered unless case_sensitive.
Value sort_key(const Value& v, bool case_sensitive) {
  if (case_sensitive || !v.is_string()) return v;
  return Value::markup(utf8_lower(v.str_bytes()));
}

Value f_trim(const Value& v, const CallArgs& a) {
  CallArgs m;
  if (const Value chars = a.get(0, "chars"); !chars.is_undefined()) m.positional.push_back(chars);
  return call_method(v.is_string() ? v : Value(v.to_text()), "strip", m);
}

Value f_length(const Value& v, const CallArgs&) { return Value(static_cast<int64_t>(length_of(v))); }

// Hugging Face's tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
Value f_tojson(const Value& v, const CallArgs& a) {
  JsonStyle style;
  const Value indent = a.get(1, "indent");
  if (indent.is_int()) style.indent = static_cast<int>(std::clamp<int64_t>(indent.as_int(), 0, 64));
  style.ensure_ascii = a.get(0, "ensure_ascii", Value(false)).truthy();
  style.sort_keys = a.get(3, "sort_keys", Value(false)).truthy();
  const Value separators = a.get(2, "separators");
  if (separators.is_list()) {
    if (separators.as_list().size() != 2 || !separators.as_list()[0].is_string() || !separators.as_list()[1].is_string())
      throw Error("tojson(separators=...) takes two strings");
    style.item_separator = separators.as_list()[0].str_bytes();
    style.key_separator = separators.as_list()[1].str_bytes();
  }
  const std::string json = to_json(v, style);
  return Value(holds_data(v) ? PromptText().text(json) : PromptText().markup(json));
}

Value f_items(const Value& v, const CallArgs&) {
  if (v.is_undefined()) return Value(List{});
  if (!v.is_dict()) throw Error(format("the filter 'items' needs a mapping, not '%s'", v.type_name()));
  return call_method(v, "items");
}

Value f_list(const Value& v, const CallArgs&) { return Value(iterate(v)); }

Value f_first(const Value& v, const CallArgs&) {
  List l = iterate(v);
  return l.empty() ? Value(Undefined{"first of an empty sequence"}) : l.front();
}

Value f_last(const Value& v, const CallArgs&) {
  List l = iterate(v);
  return l.empty() ? Value(Undefined{"last of an empty sequence"}) : l.back();
}

Value f_join(const Value& v, const CallArgs& a) {
  const Value sep = a.get(0, "d", Value::markup(""));
  const Value attr = a.get(1, "attribute");
  PromptText out;
  bool first = true;
  for (const Value& item : iterate(v)) {
    if (!first) out.append(sep.to_text());
    out.append((attr.is_undefined() ? item : attribute_path(item, attr)).to_text());
    first = false;
  }
  return Value(out);
}

Value f_upper(const Value& v, const CallArgs&) { return call_method(Value(v.to_text()), "upper"); }
Value f_lower(const Value& v, const CallArgs&) { return call_method(Value(v.to_text()), "lower"); }
Value f_capitalize(const Value& v, const CallArgs&) { return call_method(Value(v.to_text()), "capitalize"); }

// jinja2's title: a word starts after whitespace or any of - ( { [ <, its first character upper
// and the rest lower (not str.title(): "it's" stays "It's").
Value f_title(const Value& v, const CallArgs&) {
  const PromptText t = v.to_text();
  const std::string& s = t.str();
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    while (j < s.size() && (std::isspace(static_cast<unsigned char>(s[j])) || std::string_view("-({[<").find(s[j]) != std::string_view::npos)) ++j;
    out.append(s, i, j - i);
    size_t k = j;
    while (k < s.size() && !std::isspace(static_cast<unsigned char>(s[k])) && std::string_view("-({[<").find(s[k]) == std::string_view::npos) ++k;
    if (k > j) {
      const std::vector<size_t> at = code_point_offsets(std::string_view(s).substr(j, k - j));
      out += utf8_upper(s.substr(j, at[1]));
      out += utf8_lower(s.substr(j + at[1], k - j - at[1]));
    }
    i = k;
  }
  return Value(t.derived(out));
}

Value f_replace(const Value& v, const CallArgs& a) {
  CallArgs m;
  m.positional = {a.get(0, "old"), a.get(1, "new")};
  if (const Value c = a.get(2, "count"); !c.is_undefined() && !c.is_none()) m.positional.push_back(c);
  return call_method(Value(v.to_text()), "replace", m);
}

Value f_default(const Value& v, const CallArgs& a) {
  const bool boolean = a.get(1, "boolean", Value(false)).truthy();
  if (v.is_undefined() || (boolean && !v.truthy())) return a.get(0, "default_value", Value::markup(""));
  return v;
}

Value f_string(const Value& v, const CallArgs&) { return Value(v.to_text()); }
Value f_safe(const Value& v, const CallArgs&) { return v.is_string() ? v : Value(v.to_text()); }

Value f_escape(const Value& v, const CallArgs&) {
  const PromptText t = v.to_text();
  std::string out;
  for (char c : t.str()) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return Value(t.derived(out));
}

std::string python_number_text(const std::string& s) {
  // Python's int() and float() take surrounding whitespace and '_' between digits.
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  std::string out;
  for (size_t i = a; i < b; ++i) {
    if (s[i] == '_' && i > a && i + 1 < b && std::isalnum(static_cast<unsigned char>(s[i - 1])) && std::isalnum(static_cast<unsigned char>(s[i + 1]))) continue;
    out += s[i];
  }
  return out;
}

std::optional<int64_t> python_int(const std::string& text, int base) {
  std::string s = python_number_text(text);
  if (s.empty()) return std::nullopt;
  size_t at = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  // '0x1A' with base 16 (or 0), as Python allows
  if (s.size() > at + 1 && s[at] == '0') {
    const char p = static_cast<char>(s[at + 1] | 0x20);
    if ((p == 'x' && (base == 16 || base == 0)) || (p == 'o' && (base == 8 || base == 0)) || (p == 'b' && (base == 2 || base == 0))) {
      base = p == 'x' ? 16 : p == 'o' ? 8 : 2;
      s.erase(at, 2);
    }
  }
  if (base == 0) base = 10;
  if (at >= s.size() || !std::isalnum(static_cast<unsigned char>(s[at]))) return std::nullopt;
  try {
    size_t used = 0;
    const long long i = std::stoll(s, &used, base);
    if (used == s.size()) return static_cast<int64_t>(i);
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

std::optional<double> python_float(const std::string& text) {
  const std::string s = python_number_text(text);
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return d;
}

// jinja2's int: int(value, base), else int(float(value)), else the default.
Value f_int(const Value& v, const CallArgs& a) {
  const Value fallback = a.get(0, "default", Value(int64_t{0}));
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float()) return Value(static_cast<int64_t>(std::trunc(v.as_double())));
  if (v.is_string()) {
    const int base = static_cast<int>(a.get(1, "base", Value(int64_t{10})).as_int());
    if (const auto i = python_int(v.str_bytes(), base)) return Value(*i);
    if (const auto d = python_float(v.str_bytes()); d && std::isfinite(*d) && std::fabs(*d) < 9.2e18)
      return Value(static_cast<int64_t>(std::trunc(*d)));
  }
  return fallback;
}

Value f_float(const Value& v, const CallArgs& a) {
  const Value fallback = a.get(0, "default", Value(0.0));
  if (v.is_number()) return Value(v.as_double());
  if (v.is_string())
    if (const auto d = python_float(v.str_bytes())) return Value(*d);
  return fallback;
}

Value f_abs(const Value& v, const CallArgs&) {
  if (v.is_float()) return Value(std::fabs(v.as_double()));
  if (v.is_number()) return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
  throw Error(format("bad operand type for abs(): '%s'", v.type_name()));
}

Value f_round(const Value& v, const CallArgs& a) {
  if (!v.is_number()) throw Error(format("the filter 'round' needs a number, not '%s'", v.type_name()));
  const int64_t precision = std::clamp<int64_t>(a.get(0, "precision", Value(int64_t{0})).as_int(), -300, 300);
  const std::string method = a.get(1, "method", Value::markup("common")).str_bytes();
  const double scale = std::pow(10.0, static_cast<double>(precision));
  if (method == "common") {
    // Python's round(): an int stays an int; a float rounds its exact binary value to the
    // nearest decimal, ties to even (2.675 is 2.67499... so 2.67).
    if (!v.is_float()) {
      if (precision >= 0) return Value(v.as_int());
      return Value(static_cast<int64_t>(std::nearbyint(static_cast<double>(v.as_int()) * scale) / scale));
    }
    if (precision >= 0) {
      char buf[512];
      std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(precision), v.as_double());
      return Value(std::strtod(buf, nullptr));
    }
    return Value(std::nearbyint(v.as_double() * scale) / scale);
  }
  const double x = v.as_double() * scale;
  double r;
  if (method == "ceil") r = std::ceil(x);
  else if (method == "floor") r = std::floor(x);
  else throw Error("round(method=...) takes 'common', 'ceil' or 'floor'");
  return Value(r / scale);
}

Value f_reverse(const Value& v, const CallArgs&) {
  if (v.is_string()) return slice_of(v, std::nullopt, std::nullopt, -1);
  List l = iterate(v);
  std::reverse(l.begin(), l.end());
  return Value(std::move(l));
}

Value f_sort(const Value& v, const CallArgs& a) {
  const bool reverse = a.get(0, "reverse", Value(false)).truthy();
  const bool case_sensitive = a.get(1, "case_sensitive", Value(false)).truthy();
  const Value attr = a.get(2, "attribute");
  List l = iterate(v);
  auto key = [&](const Value& x) { return sort_key(attr.is_undefined() ? x : attribute_path(x, attr), case_sensitive); };
  std::stable_sort(l.begin(), l.end(), [&](const Value& x, const Value& y) {
    return reverse ? key(y).less(key(x)) : key(x).less(key(y));
  });
  return Value(std::move(l));
}

Value f_unique(const Value& v, const CallArgs& a) {
  const bool case_sensitive = a.get(0, "case_sensitive", Value(false)).truthy();
  const Value attr = a.get(1, "attribute");
  List out, seen;
  for (const Value& x : iterate(v)) {
    const Value k = sort_key(attr.is_undefined() ? x : attribute_path(x, attr), case_sensitive);
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return s.equals(k); })) continue;
    seen.push_back(k);
    out.push_back(x);
  }
  return Value(std::move(out));
}

Value min_max(const Value& v, const CallArgs& a, bool max) {
  const bool case_sensitive = a.get(0, "case_sensitive", Value(false)).truthy();
  const Value attr = a.get(1, "attribute");
  List l = iterate(v);
  if (l.empty()) return Value(Undefined{"no items"});
  auto key = [&](const Value& x) { return sort_key(attr.is_undefined() ? x : attribute_path(x, attr), case_sensitive); };
  Value best = l.front();
  for (const Value& x : l)
    if (max ? key(best).less(key(x)) : key(x).less(key(best))) best = x;
  return best;
}
Value f_min(const Value& v, const CallArgs& a) { return min_max(v, a, false); }
Value f_max(const Value& v, const CallArgs& a) { return min_max(v, a, true); }

Value f_sum(const Value& v, const CallArgs& a) {
  const Value attr = a.get(0, "attribute");
  Value total = a.get(1, "start", Value(int64_t{0}));
  for (const Value& x : iterate(v)) {
    const Value y = attr.is_undefined() ? x : attribute_path(x, attr);
    if (!total.is_number() || !y.is_number()) throw Error("the filter 'sum' adds numbers");
    total = total.is_float() || y.is_float() ? Value(total.as_double() + y.as_double()) : Value(total.as_int() + y.as_int());
  }
  return total;
}

// map('filter', args...) or map(attribute='x', default=...).
Value f_map(const Value& v, const CallArgs& a) {
  List out;
  const Value attr = a.get(static_cast<size_t>(-1), "attribute");
  if (!attr.is_undefined()) {
    const Value fallback = a.get(static_cast<size_t>(-1), "default");
    for (const Value& x : iterate(v)) {
      Value y = attribute_path(x, attr);
      out.push_back(y.is_undefined() && !fallback.is_undefined() ? fallback : y);
    }
    return Value(std::move(out));
  }
  if (a.positional.empty() || !a.positional[0].is_string()) throw Error("map() takes a filter name or attribute=");
  const std::string name = a.positional[0].str_bytes();
  if (!is_known_filter(name)) throw Error(format("map(): the filter '%s' is not supported", name.c_str()));
  CallArgs rest;
  rest.positional.assign(a.positional.begin() + 1, a.positional.end());
  rest.keyword = a.keyword;
  for (const Value& x : iterate(v)) out.push_back(apply_filter(name, x, rest));
  return Value(std::move(out));
}

// select / reject (test on the item) and selectattr / rejectattr (test on an attribute).
Value select_items(const Value& v, const CallArgs& a, bool on_attribute, bool keep) {
  const size_t test_at = on_attribute ? 1 : 0;
  const Value attr = on_attribute ? a.get(0, "attribute") : Value();
  CallArgs rest;
  if (a.positional.size() > test_at + 1) rest.positional.assign(a.positional.begin() + test_at + 1, a.positional.end());
  const Value test = a.get(test_at, "");
  if (!test.is_undefined() && (!test.is_string() || !is_known_test(test.str_bytes())))
    throw Error(format("select: the test %s is not supported", test.repr().c_str()));
  List out;
  for (const Value& x : iterate(v)) {
    const Value subject = on_attribute ? attribute_path(x, attr) : x;
    const bool pass = test.is_undefined() ? subject.truthy() : apply_test(test.str_bytes(), subject, rest);
    if (pass == keep) out.push_back(x);
  }
  return Value(std::move(out));
}
Value f_select(const Value& v, const CallArgs& a) { return select_items(v, a, false, true); }
Value f_reject(const Value& v, const CallArgs& a) { return select_items(v, a, false, false); }
Value f_selectattr(const Value& v, const CallArgs& a) { return select_items(v, a, true, true); }
Value f_rejectattr(const Value& v, const CallArgs& a) { return select_items(v, a, true, false); }

// attr() looks up an attribute, never a key: a dict's methods, a namespace's fields.
Value f_attr(const Value& v, const CallArgs& a) {
  const std::string name = need_string(a.get(0, "name"), "attr");
  if (v.is_dict() && !v.as_dict().is_namespace) {
    const Value m = attribute_of(v, name);
    return m.is_function() ? m : Value(Undefined{name});
  }
  return attribute_of(v, name);
}

Value f_dictsort(const Value& v, const CallArgs& a) {
  const bool case_sensitive = a.get(0, "case_sensitive", Value(false)).truthy();
  const std::string by = a.get(1, "by", Value::markup("key")).str_bytes();
  const bool reverse = a.get(2, "reverse", Value(false)).truthy();
  List items = f_items(v, {}).as_list();
  const size_t k = by == "value" ? 1 : 0;
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    const Value kx = sort_key(x.as_list()[k], case_sensitive), ky = sort_key(y.as_list()[k], case_sensitive);
    return reverse ? ky.less(kx) : kx.less(ky);
  });
  return Value(std::move(items));
}

// indent(width=4, first=False, blank=False): every line but the first (and blank ones) indented.
Value f_indent(const Value& v, const CallArgs& a) {
  const Value w = a.get(0, "width", Value(int64_t{4}));
  if (!w.is_string() && (w.as_int() < 0 || w.as_int() > kMaxPad)) throw Error("indent() width must be 0 to 4096");
  const std::string pad = w.is_string() ? w.str_bytes() : std::string(static_cast<size_t>(w.as_int()), ' ');
  const bool first = a.get(1, "first", Value(false)).truthy();
  const bool blank = a.get(2, "blank", Value(false)).truthy();
  const PromptText t = v.to_text();
  const std::string& s = t.str();
  PromptText out;
  size_t i = 0;
  bool is_first = true;
  while (i <= s.size()) {
    size_t nl = s.find('\n', i);
    const bool last = nl == std::string::npos;
    if (last) nl = s.size();
    const bool empty = nl == i;
    if ((!is_first || first) && (blank || !empty)) out.markup(pad);
    out.append(t.slice(i, last ? nl : nl + 1));
    is_first = false;
    if (last) break;
    i = nl + 1;
  }
  return Value(out);
}

Value f_center(const Value& v, const CallArgs& a) {
  const PromptText t = v.to_text();
  const int64_t width = a.get(0, "width", Value(int64_t{80})).as_int();
  const int64_t n = static_cast<int64_t>(num_code_points(t.str()));
  if (width <= n) return Value(t);
  if (width - n > kMaxPad) throw Error("center() would pad with more than 4096 spaces");
  // Python's str.center puts the extra space on the right when the text's length is even.
  const int64_t total = width - n;
  const int64_t left = total / 2 + (total & width & 1);
  PromptText out;
  out.markup(std::string(static_cast<size_t>(left), ' ')).append(t).markup(std::string(static_cast<size_t>(total - left), ' '));
  return Value(out);
}

Value f_wordcount(const Value& v, const CallArgs&) { return Value(static_cast<int64_t>(utf8_word_count(v.to_text().str()))); }

// "%s and %s" | format(a, b), or format(name=x) for %(name)s: Python's % formatting.
Value f_format(const Value& v, const CallArgs& a) {
  if (!a.positional.empty() && !a.keyword.empty()) throw Error("format takes positional or keyword arguments, not both");
  if (!a.keyword.empty()) {
    auto d = std::make_shared<Dict>();
    for (const auto& [k, x] : a.keyword) d->set(PromptText().markup(k), x);
    return Value(percent_format(v.to_text(), Value(d)));
  }
  return Value(percent_format(v.to_text(), Value::tuple(a.positional)));
}

// batch(n, fill): lists of n items, the last filled up with `fill` when given.
Value f_batch(const Value& v, const CallArgs& a) {
  const int64_t n = a.get(0, "linecount").as_int();
  if (n <= 0) throw Error("batch() needs a positive count");
  const Value fill = a.get(1, "fill_with");
  List out, row;
  for (const Value& x : iterate(v)) {
    row.push_back(x);
    if (static_cast<int64_t>(row.size()) == n) out.push_back(Value(std::exchange(row, {})));
  }
  if (!row.empty()) {
    if (!fill.is_undefined() && !fill.is_none())
      while (static_cast<int64_t>(row.size()) < n) row.push_back(fill);
    out.push_back(Value(std::move(row)));
  }
  return Value(std::move(out));
}

// truncate(length=255, killwords=False, end='...', leeway=5), as jinja2 3.1 has it.
Value f_truncate(const Value& v, const CallArgs& a) {
  const PromptText t = v.to_text();
  const int64_t length = a.get(0, "length", Value(int64_t{255})).as_int();
  const bool killwords = a.get(1, "killwords", Value(false)).truthy();
  const PromptText end = a.get(2, "end", Value::markup("...")).to_text();
  const int64_t leeway = a.get(3, "leeway", Value(int64_t{5})).as_int();
  const std::vector<size_t> at = code_point_offsets(t.str());
  const int64_t n = static_cast<int64_t>(at.size()) - 1;
  const int64_t end_len = static_cast<int64_t>(num_code_points(end.str()));
  if (n <= length + leeway) return Value(t);
  const int64_t keep = std::max<int64_t>(0, length - end_len);
  PromptText head = t.slice(0, at[static_cast<size_t>(keep)]);
  if (!killwords) {
    const size_t space = head.str().rfind(' ');
    if (space != std::string::npos) head = head.slice(0, space);
  }
  return Value(head.append(end));
}

// groupby(attribute): (grouper, list) pairs sorted by the attribute, each readable as
// .grouper and .list.
Value f_groupby(const Value& v, const CallArgs& a) {
  const Value attr = a.get(0, "attribute");
  const Value fallback = a.get(1, "default");
  const bool case_sensitive = a.get(2, "case_sensitive", Value(false)).truthy();
  List items = iterate(v);
  auto key = [&](const Value& x) {
    Value k = attribute_path(x, attr);
    if (k.is_undefined() && !fallback.is_undefined()) k = fallback;
    return sort_key(k, case_sensitive);
  };
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) { return key(x).less(key(y)); });
  List out;
  for (size_t i = 0; i < items.size();) {
    const Value k = key(items[i]);
    List group;
    for (; i < items.size() && key(items[i]).equals(k); ++i) group.push_back(items[i]);
    auto d = std::make_shared<Dict>();
    d->set(PromptText().markup("grouper"), attribute_path(group.front(), attr));
    d->set(PromptText().markup("list"), Value(std::move(group)));
    out.push_back(Value(d));
  }
  return Value(std::move(out));
}

const std::map<std::string, Filter, std::less<>>& filters() {
  static const std::map<std::string, Filter, std::less<>> k = {
      {"abs", f_abs},        {"attr", f_attr},         {"batch", f_batch},           {"capitalize", f_capitalize},
      {"center", f_center},  {"groupby", f_groupby},   {"truncate", f_truncate},
      {"count", f_length},   {"d", f_default},         {"default", f_default},       {"dictsort", f_dictsort},
      {"e", f_escape},       {"escape", f_escape},     {"first", f_first},           {"float", f_float},
      {"format", f_format},  {"indent", f_indent},     {"int", f_int},               {"items", f_items},
      {"join", f_join},      {"last", f_last},         {"length", f_length},         {"list", f_list},
      {"lower", f_lower},    {"map", f_map},           {"max", f_max},               {"min", f_min},
      {"reject", f_reject},  {"rejectattr", f_rejectattr}, {"replace", f_replace},   {"reverse", f_reverse},
      {"round", f_round},    {"safe", f_safe},         {"select", f_select},         {"selectattr", f_selectattr},
      {"sort", f_sort},      {"string", f_string},     {"sum", f_sum},               {"title", f_title},
      {"tojson", f_tojson},  {"trim", f_trim},         {"unique", f_unique},         {"upper", f_upper},
      {"wordcount", f_wordcount},
  };
  return k;
}

}  // namespace

bool is_known_filter(std::string_view name) { return filters().count(name) > 0; }

Value apply_filter(std::string_view name, const Value& subject, const CallArgs& args) {
  const auto it = filters().find(name);
  if (it == filters().end()) throw Error(format("the filter '%s' is not supported", std::string(name).c_str()));
  return it->second(subject, args);
}

}  // namespace pagedchat::jinja
