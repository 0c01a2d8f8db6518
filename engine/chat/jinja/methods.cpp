// Lookup (obj.name, obj[key], obj[a:b]) and the Python methods chat templates call (see
// builtins.h). Strings keep their provenance where a method only cuts them (strip, split,
// slices); a method that rewrites them (upper, replace, format) yields text unless all of the
// input was markup.
#include <algorithm>
#include <cctype>

#include "engine/chat/jinja/builtins.h"
#include "engine/chat/jinja/code_points.h"
#include "engine/chat/jinja/unicode_text.h"
#include "engine/common/error.h"

namespace pagedchat::jinja {
namespace {

bool is_py_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// str.strip / lstrip / rstrip: whitespace, or any of `chars`.
PromptText strip(const PromptText& s, const Value& chars, bool left, bool right) {
  const std::string& b = s.str();
  auto strips = [&](char c) {
    return chars.is_string() ? chars.str_bytes().find(c) != std::string::npos : is_py_space(c);
  };
  size_t from = 0, to = b.size();
  if (left)
    while (from < to && strips(b[from])) ++from;
  if (right)
    while (to > from && strips(b[to - 1])) --to;
  return s.slice(from, to);
}

List split(const PromptText& s, const Value& sep, int64_t max_split) {
  const std::string& b = s.str();
  List out;
  if (!sep.is_string()) {  // runs of whitespace, none at the ends
    size_t i = 0;
    while (true) {
      while (i < b.size() && is_py_space(b[i])) ++i;
      if (i >= b.size()) break;
      if (max_split >= 0 && static_cast<int64_t>(out.size()) == max_split) {
        size_t end = b.size();
        while (end > i && is_py_space(b[end - 1])) --end;
        out.push_back(Value(s.slice(i, end)));
        break;
      }
      size_t j = i;
      while (j < b.size() && !is_py_space(b[j])) ++j;
      out.push_back(Value(s.slice(i, j)));
      i = j;
    }
    return out;
  }
  const std::string& d = sep.str_bytes();
  if (d.empty()) throw Error("empty separator in split()");
  size_t i = 0;
  while (max_split < 0 || static_cast<int64_t>(out.size()) < max_split) {
    const size_t at = b.find(d, i);
    if (at == std::string::npos) break;
    out.push_back(Value(s.slice(i, at)));
    i = at + d.size();
  }
  out.push_back(Value(s.slice(i, b.size())));
  return out;
}

List rsplit(const PromptText& s, const Value& sep, int64_t max_split) {
  if (max_split < 0 || !sep.is_string()) return split(s, sep, max_split);
  const std::string& b = s.str();
  const std::string& d = sep.str_bytes();
  if (d.empty()) throw Error("empty separator in rsplit()");
  List out;
  size_t end = b.size();
  while (static_cast<int64_t>(out.size()) < max_split && end >= d.size()) {
    const size_t at = b.rfind(d, end - d.size());
    if (at == std::string::npos) break;
    out.push_back(Value(s.slice(at + d.size(), end)));
    end = at;
  }
  out.push_back(Value(s.slice(0, end)));
  std::reverse(out.begin(), out.end());
  return out;
}


bool has_prefix_or_suffix(const std::string& s, const Value& what, bool prefix) {
  auto one = [&](const Value& v) {
    if (!v.is_string()) throw Error(format("%s() takes a string or a tuple of strings", prefix ? "startswith" : "endswith"));
    const std::string& p = v.str_bytes();
    return p.size() <= s.size() && (prefix ? s.compare(0, p.size(), p) == 0 : s.compare(s.size() - p.size(), p.size(), p) == 0);
  };
  if (what.is_list()) return std::any_of(what.as_list().begin(), what.as_list().end(), one);
  return one(what);
}

int64_t int_arg(const CallArgs& args, size_t pos, std::string_view name, int64_t fallback) {
  const Value v = args.get(pos, name);
  if (v.is_undefined() || v.is_none()) return fallback;
  if (!v.is_int() && !v.is_bool()) throw Error(format("'%s' must be an integer", std::string(name).c_str()));
  return v.as_int();
}

Value string_method(const Value& self, std::string_view name) {
  const PromptText s = self.as_string();
  auto bind = [&](auto fn) {
    return Value::function("str." + std::string(name), [s, fn](CallArgs& a) -> Value { return fn(s, a); });
  };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const bool l = name != "rstrip", r = name != "lstrip";
    return bind([l, r](const PromptText& t, CallArgs& a) { return Value(strip(t, a.get(0, "chars"), l, r)); });
  }
  if (name == "split")
    return bind([](const PromptText& t, CallArgs& a) { return Value(split(t, a.get(0, "sep"), int_arg(a, 1, "maxsplit", -1))); });
  if (name == "rsplit")
    return bind([](const PromptText& t, CallArgs& a) { return Value(rsplit(t, a.get(0, "sep"), int_arg(a, 1, "maxsplit", -1))); });
  if (name == "splitlines")
    return bind([](const PromptText& t, CallArgs&) {
      List out;
      size_t i = 0;
      const std::string& b = t.str();
      while (i < b.size()) {
        size_t j = b.find_first_of("\r\n", i);
        if (j == std::string::npos) j = b.size();
        out.push_back(Value(t.slice(i, j)));
        i = j + (j + 1 < b.size() && b[j] == '\r' && b[j + 1] == '\n' ? 2 : 1);
      }
      return Value(std::move(out));
    });
  if (name == "startswith" || name == "endswith") {
    const bool prefix = name == "startswith";
    return bind([prefix](const PromptText& t, CallArgs& a) { return Value(has_prefix_or_suffix(t.str(), a.get(0, "prefix"), prefix)); });
  }
  if (name == "upper" || name == "lower")
    return bind([up = name == "upper"](const PromptText& t, CallArgs&) {
      return Value(t.derived(up ? utf8_upper(t.str()) : utf8_lower(t.str())));
    });
  if (name == "title") return bind([](const PromptText& t, CallArgs&) { return Value(t.derived(utf8_title(t.str()))); });
  if (name == "capitalize") return bind([](const PromptText& t, CallArgs&) { return Value(t.derived(utf8_capitalize(t.str()))); });
  if (name == "replace")
    return bind([](const PromptText& t, CallArgs& a) {
      const Value from = a.get(0, "old"), to = a.get(1, "new");
      if (!from.is_string() || !to.is_string()) throw Error("replace() takes two strings");
      int64_t count = int_arg(a, 2, "count", -1);
      const std::string& b = t.str();
      const std::string& f = from.str_bytes();
      // Pieces of the original keep their provenance; the replacement is as it was written.
      PromptText out;
      size_t i = 0;
      if (f.empty()) {  // between every character, and at both ends
        const std::vector<size_t> at = code_point_offsets(b);
        for (size_t k = 0; k < at.size(); ++k) {
          if (count-- != 0) out.append(to.as_string());
          if (k + 1 < at.size()) out.append(t.slice(at[k], at[k + 1]));
        }
        i = b.size();
      }
      while (count != 0 && !f.empty()) {
        const size_t at = b.find(f, i);
        if (at == std::string::npos) break;
        out.append(t.slice(i, at)).append(to.as_string());
        i = at + f.size();
        --count;
      }
      out.append(t.slice(i, b.size()));
      if (!t.all_markup() && !out.all_markup()) return Value(t.derived(out.str()));
      return Value(out);
    });
  if (name == "find" || name == "rfind" || name == "index" || name == "count")
    return bind([name = std::string(name)](const PromptText& t, CallArgs& a) -> Value {
      const Value sub = a.get(0, "sub");
      if (!sub.is_string()) throw Error(name + "() takes a string");
      const std::string& b = t.str();
      const std::string& x = sub.str_bytes();
      if (name == "count") {
        if (x.empty()) return Value(static_cast<int64_t>(num_code_points(b) + 1));
        int64_t n = 0;
        for (size_t at = b.find(x); at != std::string::npos; at = b.find(x, at + x.size())) ++n;
        return Value(n);
      }
      const size_t at = name == "rfind" ? b.rfind(x) : b.find(x);
      if (at == std::string::npos) {
        if (name == "index") throw Error("substring not found");
        return Value(int64_t{-1});
      }
      return Value(static_cast<int64_t>(num_code_points(std::string_view(b).substr(0, at))));
    });
  if (name == "join")
    return bind([](const PromptText& sep, CallArgs& a) {
      PromptText out;
      bool first = true;
      for (const Value& v : iterate(a.get(0, "iterable"))) {
        if (!v.is_string()) throw Error(format("join() expects strings, found '%s'", v.type_name()));
        if (!first) out.append(sep);
        out.append(v.as_string());
        first = false;
      }
      return Value(out);
    });
  if (name == "format") return bind([](const PromptText& t, CallArgs& a) { return Value(str_format(t, a)); });
  if (name == "isdigit" || name == "isalpha" || name == "isalnum" || name == "isspace" || name == "islower" || name == "isupper")
    return bind([name = std::string(name)](const PromptText& t, CallArgs&) {
      const std::string& b = t.str();
      if (name == "islower") return Value(utf8_is_lower(b));
      if (name == "isupper") return Value(utf8_is_upper(b));
      if (b.empty()) return Value(false);
      for (unsigned char c : b) {
        if (name == "isdigit" && !std::isdigit(c)) return Value(false);
        if (name == "isalpha" && !std::isalpha(c)) return Value(false);
        if (name == "isalnum" && !std::isalnum(c)) return Value(false);
        if (name == "isspace" && !is_py_space(static_cast<char>(c))) return Value(false);
      }
      return Value(true);
    });
  return Value(Undefined{"str." + std::string(name)});
}

Value dict_method(const Value& self, std::string_view name) {
  const Value d = self;
  if (name == "items" || name == "keys" || name == "values")
    return Value::function("dict." + std::string(name), [d, which = std::string(name)](CallArgs&) {
      List out;
      for (const auto& [k, v] : d.as_dict().entries) {
        if (which == "items") out.push_back(Value::tuple(List{Value(k), v}));
        else if (which == "keys") out.push_back(Value(k));
        else out.push_back(v);
      }
      return Value(std::move(out));
    });
  if (name == "get")
    return Value::function("dict.get", [d](CallArgs& a) {
      const Value key = a.get(0, "key");
      const Value* v = key.is_string() ? d.as_dict().find(key.str_bytes()) : nullptr;
      return v ? *v : a.get(1, "default", Value::none());
    });
  return Value(Undefined{std::string(name)});
}

Value list_method(const Value& self, std::string_view name) {
  const Value l = self;
  if (name == "index" || name == "count")
    return Value::function("list." + std::string(name), [l, count = name == "count"](CallArgs& a) -> Value {
      const Value x = a.get(0, "value");
      int64_t n = 0;
      for (size_t i = 0; i < l.as_list().size(); ++i) {
        if (!l.as_list()[i].equals(x)) continue;
        if (!count) return Value(static_cast<int64_t>(i));
        ++n;
      }
      if (!count) throw Error("list.index(x): x not in list");
      return Value(n);
    });
  static const char* kChanging[] = {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse"};
  for (const char* c : kChanging)
    if (name == c)
      throw Error(format("the template changes a list with .%s(), which the sandbox templates render in forbids",
                         c));
  return Value(Undefined{std::string(name)});
}

int64_t normalize_index(int64_t i, size_t n) { return i < 0 ? i + static_cast<int64_t>(n) : i; }

}  // namespace

size_t length_of(const Value& v) {
  if (v.is_string()) return num_code_points(v.str_bytes());
  if (v.is_list()) return v.as_list().size();
  if (v.is_dict()) return v.as_dict().entries.size();
  if (v.is_undefined()) return 0;
  throw Error(format("object of type '%s' has no len()", v.type_name()));
}

List iterate(const Value& v) {
  if (v.is_list()) return v.as_list();
  if (v.is_undefined()) return {};
  List out;
  if (v.is_dict()) {
    if (v.as_dict().is_namespace) throw Error("a namespace is not iterable");
    for (const auto& [k, item] : v.as_dict().entries) out.push_back(Value(k));
    return out;
  }
  if (v.is_string()) {
    const std::vector<size_t> at = code_point_offsets(v.str_bytes());
    for (size_t i = 0; i + 1 < at.size(); ++i) out.push_back(Value(v.as_string().slice(at[i], at[i + 1])));
    return out;
  }
  throw Error(format("'%s' object is not iterable", v.type_name()));
}

Value attribute_of(const Value& obj, std::string_view name) {
  if (obj.is_undefined())
    throw Error(format("'%s' is undefined (looking up .%s)", obj.undefined_name().c_str(), std::string(name).c_str()));
  if (obj.is_dict()) {
    if (!obj.as_dict().is_namespace) {
      // jinja2 tries the Python attribute first: d.items is the method, even with an 'items' key.
      Value m = dict_method(obj, name);
      if (!m.is_undefined()) return m;
    }
    if (const Value* v = obj.as_dict().find(name)) return *v;
    return Value(Undefined{std::string(name)});
  }
  if (obj.is_string()) return string_method(obj, name);
  if (obj.is_list()) return list_method(obj, name);
  return Value(Undefined{std::string(name)});
}

Value item_of(const Value& obj, const Value& key) {
  if (obj.is_undefined())
    throw Error(format("'%s' is undefined (looking up [%s])", obj.undefined_name().c_str(), key.repr().c_str()));
  if (obj.is_dict()) {
    if (key.is_string())
      if (const Value* v = obj.as_dict().find(key.str_bytes())) return *v;
    if (key.is_string() && !obj.as_dict().is_namespace) return dict_method(obj, key.str_bytes());
    return Value(Undefined{key.repr()});
  }
  if (obj.is_list() || obj.is_string()) {
    if (key.is_string()) return attribute_of(obj, key.str_bytes());
    if (!key.is_int() && !key.is_bool()) throw Error(format("indices must be integers, not '%s'", key.type_name()));
    const size_t n = length_of(obj);
    const int64_t i = normalize_index(key.as_int(), n);
    if (i < 0 || i >= static_cast<int64_t>(n)) return Value(Undefined{"index " + std::to_string(key.as_int())});
    if (obj.is_list()) return obj.as_list()[static_cast<size_t>(i)];
    const std::vector<size_t> at = code_point_offsets(obj.str_bytes());
    return Value(obj.as_string().slice(at[i], at[i + 1]));
  }
  return Value(Undefined{key.repr()});
}

Value slice_of(const Value& obj, std::optional<int64_t> start, std::optional<int64_t> stop,
               std::optional<int64_t> step_opt) {
  if (!obj.is_list() && !obj.is_string()) throw Error(format("'%s' object cannot be sliced", obj.type_name()));
  const int64_t n = static_cast<int64_t>(length_of(obj));
  const int64_t step = step_opt.value_or(1);
  if (step == 0) throw Error("slice step cannot be zero");
  // Python's PySlice_AdjustIndices.
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v < 0 ? *v + n : *v;
    if (x < 0) x = step < 0 ? -1 : 0;
    if (x >= n) x = step < 0 ? n - 1 : n;
    return x;
  };
  const int64_t a = clamp(start, step < 0 ? n - 1 : 0);
  const int64_t b = clamp(stop, step < 0 ? -1 : n);
  std::vector<int64_t> picked;
  for (int64_t i = a; step > 0 ? i < b : i > b; i += step) picked.push_back(i);
  if (obj.is_list()) {
    List out;
    for (int64_t i : picked) out.push_back(obj.as_list()[static_cast<size_t>(i)]);
    return Value(std::move(out));
  }
  const std::vector<size_t> at = code_point_offsets(obj.str_bytes());
  if (step == 1) return Value(obj.as_string().slice(at[a], at[std::max(a, b)]));
  std::string s;
  for (int64_t i : picked) s += obj.str_bytes().substr(at[i], at[i + 1] - at[i]);
  return Value(obj.as_string().derived(s));
}

}  // namespace pagedchat::jinja
