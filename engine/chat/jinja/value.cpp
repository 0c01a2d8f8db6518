// Python's meanings for template values (see value.h).
#include "engine/chat/jinja/value.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "engine/common/error.h"

namespace pagedchat::jinja {

Value::Value(List l) : v_(std::make_shared<const Sequence>(Sequence{std::move(l), false})) {}

Value Value::tuple(List l) {
  Value v;
  v.v_ = std::make_shared<const Sequence>(Sequence{std::move(l), true});
  return v;
}

bool Value::same_object(const Value& o) const {
  if (v_.index() != o.v_.index()) return false;
  if (is_list()) return std::get<std::shared_ptr<const Sequence>>(v_) == std::get<std::shared_ptr<const Sequence>>(o.v_);
  if (is_dict()) return &as_dict() == &o.as_dict();
  if (is_function()) return &as_function() == &o.as_function();
  return equals(o);
}

Value Value::function(std::string name, std::function<Value(CallArgs&)> call) {
  return Value(std::make_shared<const Function>(Function{std::move(name), std::move(call)}));
}

int64_t Value::as_int() const {
  if (is_bool()) return as_bool() ? 1 : 0;
  return std::get<int64_t>(v_);
}

double Value::as_double() const {
  if (is_float()) return std::get<double>(v_);
  return static_cast<double>(as_int());
}

bool Value::truthy() const {
  if (is_undefined() || is_none()) return false;
  if (is_bool()) return as_bool();
  if (is_int()) return as_int() != 0;
  if (is_float()) return as_double() != 0.0;
  if (is_string()) return !as_string().empty();
  if (is_list()) return !as_list().empty();
  if (is_dict()) return as_dict().is_namespace || !as_dict().entries.empty();
  return true;
}

bool Value::equals(const Value& o) const {
  if (is_number() && o.is_number()) {
    if (is_float() || o.is_float()) return as_double() == o.as_double();
    return as_int() == o.as_int();
  }
  if (v_.index() != o.v_.index()) return false;
  if (is_undefined() || is_none()) return true;
  if (is_string()) return str_bytes() == o.str_bytes();
  if (is_list()) {
    const List& a = as_list();
    const List& b = o.as_list();
    if (is_tuple() != o.is_tuple() || a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!a[i].equals(b[i])) return false;
    return true;
  }
  if (is_dict()) {
    const Dict& a = as_dict();
    const Dict& b = o.as_dict();
    if (&a == &b) return true;
    if (a.is_namespace || b.is_namespace || a.entries.size() != b.entries.size()) return false;
    for (const auto& [k, v] : a.entries) {
      const Value* w = b.find(k.str());
      if (!w || !v.equals(*w)) return false;
    }
    return true;
  }
  return &as_function() == &o.as_function();
}

bool Value::less(const Value& o) const {
  if (is_number() && o.is_number()) {
    if (is_float() || o.is_float()) return as_double() < o.as_double();
    return as_int() < o.as_int();
  }
  if (is_string() && o.is_string()) return str_bytes() < o.str_bytes();
  if (is_list() && o.is_list()) {
    const List& a = as_list();
    const List& b = o.as_list();
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
      if (a[i].less(b[i])) return true;
      if (b[i].less(a[i])) return false;
    }
    return a.size() < b.size();
  }
  throw Error(format("'<' not supported between instances of '%s' and '%s'", type_name(), o.type_name()));
}

const char* Value::type_name() const {
  if (is_undefined()) return "Undefined";
  if (is_none()) return "NoneType";
  if (is_bool()) return "bool";
  if (is_int()) return "int";
  if (is_float()) return "float";
  if (is_string()) return "str";
  if (is_list()) return is_tuple() ? "tuple" : "list";
  if (is_dict()) return as_dict().is_namespace ? "Namespace" : "dict";
  return "function";
}

PromptText Value::to_text() const {
  if (is_undefined()) return {};
  if (is_string()) return as_string();
  // A list or dict prints its items' reprs; if any came from the caller, so does all of it.
  PromptText out;
  return holds_data(*this) ? out.text(repr()) : out.markup(repr());
}

bool holds_data(const Value& v) {
  if (v.is_string()) return !v.as_string().all_markup();
  if (v.is_list())
    for (const Value& item : v.as_list())
      if (holds_data(item)) return true;
  if (v.is_dict())
    for (const auto& [k, item] : v.as_dict().entries)
      if (!k.all_markup() || holds_data(item)) return true;
  return false;
}

std::string python_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  // Shortest round-trip digits in scientific form, then laid out as Python's repr does: plain
  // decimals for exponents -4..15, else d.ddde+XX.
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, end);
  const size_t e = sci.find('e');
  const int exp = std::stoi(sci.substr(e + 1));
  const bool neg = sci[0] == '-';
  std::string digits;  // the significant digits, without sign or point
  for (size_t i = neg ? 1 : 0; i < e; ++i)
    if (sci[i] != '.') digits += sci[i];
  const size_t n = digits.size();
  std::string out = neg ? "-" : "";
  if (exp >= 16 || exp < -4) {
    out += digits[0];
    if (n > 1) {
      out += '.';
      out.append(digits, 1, n - 1);
    }
    char ebuf[16];
    std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out += ebuf;
  } else if (exp < 0) {
    out += "0.";
    out.append(static_cast<size_t>(-exp - 1), '0');
    out += digits;
  } else {
    const size_t whole = static_cast<size_t>(exp) + 1;  // digits before the point
    out.append(digits, 0, std::min(whole, n));
    if (whole > n) out.append(whole - n, '0');
    out += '.';
    if (whole < n) out.append(digits, whole, n - whole);
    else out += '0';
  }
  return out;
}

std::string python_string_repr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char q = has_single && !has_double ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == q || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += q;
  return out;
}

std::string Value::repr() const {
  if (is_undefined()) return "Undefined";
  if (is_none()) return "None";
  if (is_bool()) return as_bool() ? "True" : "False";
  if (is_int()) return std::to_string(as_int());
  if (is_float()) return python_float_repr(as_double());
  if (is_string()) return python_string_repr(str_bytes());
  if (is_list()) {
    std::string out = is_tuple() ? "(" : "[";
    for (size_t i = 0; i < as_list().size(); ++i) out += (i ? ", " : "") + as_list()[i].repr();
    if (is_tuple() && as_list().size() == 1) out += ",";
    return out + (is_tuple() ? ")" : "]");
  }
  if (is_dict()) {
    std::string out = as_dict().is_namespace ? "<Namespace {" : "{";
    bool first = true;
    for (const auto& [k, v] : as_dict().entries) {
      out += (first ? "" : ", ") + python_string_repr(k.str()) + ": " + v.repr();
      first = false;
    }
    return out + (as_dict().is_namespace ? "}>" : "}");
  }
  return "<function " + as_function().name + ">";
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : entries)
    if (k.str() == key) return &v;
  return nullptr;
}

void Dict::set(PromptText key, Value value) {
  for (auto& [k, v] : entries)
    if (k.str() == key.str()) {
      v = std::move(value);
      return;
    }
  entries.emplace_back(std::move(key), std::move(value));
}

Value CallArgs::get(size_t position, std::string_view name, Value fallback) const {
  if (position < positional.size()) return positional[position];
  for (const auto& [k, v] : keyword)
    if (k == name) return v;
  return fallback;
}

}  // namespace pagedchat::jinja
