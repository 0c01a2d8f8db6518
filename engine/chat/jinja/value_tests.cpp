// jinja2's tests (`x is defined`, `n is divisibleby 3`), the ones chat templates use (see
// builtins.h), with Python's meanings (`true is number`, but `true is not integer`).
#include <map>

#include "engine/chat/jinja/builtins.h"
#include "engine/chat/jinja/unicode_text.h"
#include "engine/common/error.h"

namespace pagedchat::jinja {
namespace {

using Test = bool (*)(const Value&, const CallArgs&);


bool t_defined(const Value& v, const CallArgs&) { return !v.is_undefined(); }
bool t_undefined(const Value& v, const CallArgs&) { return v.is_undefined(); }
bool t_none(const Value& v, const CallArgs&) { return v.is_none(); }
bool t_boolean(const Value& v, const CallArgs&) { return v.is_bool(); }
bool t_true(const Value& v, const CallArgs&) { return v.is_bool() && v.as_bool(); }
bool t_false(const Value& v, const CallArgs&) { return v.is_bool() && !v.as_bool(); }
bool t_integer(const Value& v, const CallArgs&) { return v.is_int(); }
bool t_float(const Value& v, const CallArgs&) { return v.is_float(); }
bool t_number(const Value& v, const CallArgs&) { return v.is_number(); }
bool t_string(const Value& v, const CallArgs&) { return v.is_string(); }
bool t_mapping(const Value& v, const CallArgs&) { return v.is_dict() && !v.as_dict().is_namespace; }
bool t_sequence(const Value& v, const CallArgs&) { return v.is_string() || v.is_list() || (v.is_dict() && !v.as_dict().is_namespace); }
// Undefined iterates as nothing, so jinja2 calls it iterable.
bool t_iterable(const Value& v, const CallArgs& a) { return v.is_undefined() || t_sequence(v, a); }
bool t_callable(const Value& v, const CallArgs&) { return v.is_function(); }
bool t_even(const Value& v, const CallArgs&) { return v.is_number() && v.as_int() % 2 == 0; }
bool t_odd(const Value& v, const CallArgs&) { return v.is_number() && v.as_int() % 2 != 0; }
bool t_divisibleby(const Value& v, const CallArgs& a) {
  const Value n = a.get(0, "num");
  return n.as_int() != 0 && v.as_int() % n.as_int() == 0;
}
bool t_eq(const Value& v, const CallArgs& a) { return v.equals(a.get(0, "other")); }
bool t_ne(const Value& v, const CallArgs& a) { return !v.equals(a.get(0, "other")); }
bool t_lt(const Value& v, const CallArgs& a) { return v.less(a.get(0, "other")); }
bool t_le(const Value& v, const CallArgs& a) { return !a.get(0, "other").less(v); }
bool t_gt(const Value& v, const CallArgs& a) { return a.get(0, "other").less(v); }
bool t_ge(const Value& v, const CallArgs& a) { return !v.less(a.get(0, "other")); }
bool t_sameas(const Value& v, const CallArgs& a) { return v.same_object(a.get(0, "other")); }
bool t_in(const Value& v, const CallArgs& a) {
  const Value seq = a.get(0, "seq");
  if (seq.is_string()) return v.is_string() && seq.str_bytes().find(v.str_bytes()) != std::string::npos;
  if (seq.is_dict()) return v.is_string() && seq.as_dict().find(v.str_bytes());
  for (const Value& x : iterate(seq))
    if (x.equals(v)) return true;
  return false;
}
bool t_lower(const Value& v, const CallArgs&) { return v.is_string() && utf8_is_lower(v.str_bytes()); }
bool t_upper(const Value& v, const CallArgs&) { return v.is_string() && utf8_is_upper(v.str_bytes()); }
bool t_filter(const Value& v, const CallArgs&) { return v.is_string() && is_known_filter(v.str_bytes()); }
bool t_test(const Value& v, const CallArgs&) { return v.is_string() && is_known_test(v.str_bytes()); }

const std::map<std::string, Test, std::less<>>& tests() {
  static const std::map<std::string, Test, std::less<>> k = {
      {"boolean", t_boolean}, {"callable", t_callable}, {"defined", t_defined}, {"divisibleby", t_divisibleby},
      {"eq", t_eq},           {"equalto", t_eq},        {"==", t_eq},           {"even", t_even},
      {"false", t_false},     {"float", t_float},       {"ge", t_ge},           {">=", t_ge},
      {"gt", t_gt},           {"greaterthan", t_gt},    {">", t_gt},            {"in", t_in},
      {"integer", t_integer}, {"iterable", t_iterable}, {"le", t_le},           {"<=", t_le},
      {"lower", t_lower},     {"lt", t_lt},             {"lessthan", t_lt},     {"<", t_lt},
      {"mapping", t_mapping}, {"ne", t_ne},             {"!=", t_ne},           {"none", t_none},
      {"number", t_number},   {"odd", t_odd},           {"sameas", t_sameas},   {"sequence", t_sequence},
      {"string", t_string},   {"true", t_true},         {"undefined", t_undefined}, {"upper", t_upper},
      {"filter", t_filter},   {"test", t_test},
  };
  return k;
}

}  // namespace

bool is_known_test(std::string_view name) { return tests().count(name) > 0; }

bool apply_test(std::string_view name, const Value& subject, const CallArgs& args) {
  const auto it = tests().find(name);
  if (it == tests().end()) throw Error(format("the test '%s' is not supported", std::string(name).c_str()));
  return it->second(subject, args);
}

}  // namespace pagedchat::jinja
