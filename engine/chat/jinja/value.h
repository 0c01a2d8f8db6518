#pragma once
// The values a chat template computes with, with Python's meanings (a template is Python-flavoured
// Jinja, rendered by Hugging Face with jinja2): truthiness, equality, str() and repr(). Strings are
// PromptText, so each byte remembers whether the template wrote it (markup) or the caller's data
// did (a message's content, a tool's JSON): only markup may become control tokens.
// Lists and dicts are shared and never changed (the renderer is jinja2's immutable sandbox), but
// for namespace(), whose attributes a template sets.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "engine/chat/prompt_text.h"

namespace pagedchat::jinja {

class Value;
struct CallArgs;

struct Undefined {
  std::string name;  // what was looked up, for the error when it is used
};
struct NoneType {};
using List = std::vector<Value>;
// A list or a tuple (Python prints them differently and a tuple never equals a list).
struct Sequence {
  List items;
  bool tuple = false;
};
struct Dict;
struct Function {
  std::string name;
  std::function<Value(CallArgs&)> call;
};

class Value {
 public:
  Value() = default;  // undefined
  Value(Undefined u) : v_(std::move(u)) {}
  Value(NoneType) : v_(NoneType{}) {}
  Value(bool b) : v_(b) {}
  Value(int64_t i) : v_(i) {}
  Value(int i) : v_(int64_t{i}) {}
  Value(double d) : v_(d) {}
  Value(PromptText s) : v_(std::move(s)) {}
  Value(List l);
  static Value tuple(List l);
  Value(std::shared_ptr<Dict> d) : v_(std::move(d)) {}
  Value(std::shared_ptr<const Function> f) : v_(std::move(f)) {}

  // The template's own text, and the caller's data (never markup).
  static Value markup(std::string s) { return Value(PromptText().markup(s)); }
  static Value text(std::string s) { return Value(PromptText().text(s)); }
  static Value none() { return Value(NoneType{}); }
  static Value function(std::string name, std::function<Value(CallArgs&)> call);

  bool is_undefined() const { return std::holds_alternative<Undefined>(v_); }
  bool is_none() const { return std::holds_alternative<NoneType>(v_); }
  bool is_bool() const { return std::holds_alternative<bool>(v_); }
  bool is_int() const { return std::holds_alternative<int64_t>(v_); }  // bool is not
  bool is_float() const { return std::holds_alternative<double>(v_); }
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return std::holds_alternative<PromptText>(v_); }
  bool is_list() const { return std::holds_alternative<std::shared_ptr<const Sequence>>(v_); }  // or a tuple
  bool is_tuple() const { return is_list() && std::get<std::shared_ptr<const Sequence>>(v_)->tuple; }
  bool is_dict() const { return std::holds_alternative<std::shared_ptr<Dict>>(v_); }
  bool is_function() const { return std::holds_alternative<std::shared_ptr<const Function>>(v_); }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const;     // int or bool
  double as_double() const;   // any number
  const PromptText& as_string() const { return std::get<PromptText>(v_); }
  const std::string& str_bytes() const { return as_string().str(); }
  const List& as_list() const { return std::get<std::shared_ptr<const Sequence>>(v_)->items; }
  Dict& as_dict() const { return *std::get<std::shared_ptr<Dict>>(v_); }
  const Function& as_function() const { return *std::get<std::shared_ptr<const Function>>(v_); }
  const std::string& undefined_name() const { return std::get<Undefined>(v_).name; }

  // Python's truth value; undefined is false.
  bool truthy() const;
  // Python's == (1 == 1.0 == True; strings by their characters, whoever wrote them).
  bool equals(const Value& other) const;
  // Python's `is`: the same list, dict or function; for the rest, equal values of one type.
  bool same_object(const Value& other) const;
  // Python's <; throws Error for values Python cannot order.
  bool less(const Value& other) const;
  // What {{ value }} prints: Python's str(), undefined as nothing.
  PromptText to_text() const;
  // Python's repr(), as str() of a list or dict shows its items.
  std::string repr() const;
  // The Python type's name, for messages ("'int' object has no attribute 'strip'").
  const char* type_name() const;

 private:
  std::variant<Undefined, NoneType, bool, int64_t, double, PromptText, std::shared_ptr<const Sequence>,
               std::shared_ptr<Dict>, std::shared_ptr<const Function>>
      v_;
};

// A dict keeps its keys' order (Python 3.7+); chat template dicts are small, so lookup is a scan.
// A namespace() is a dict whose attributes {% set ns.x = ... %} may change.
struct Dict {
  std::vector<std::pair<PromptText, Value>> entries;
  bool is_namespace = false;

  const Value* find(std::string_view key) const;
  void set(PromptText key, Value value);
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;

  // The argument at `position` or named `name`, else `fallback` (undefined by default).
  Value get(size_t position, std::string_view name, Value fallback = {}) const;
};

// Whether any string in `v` (its items, keys and values, all the way down) came from the caller.
bool holds_data(const Value& v);

// Python's float repr: the shortest digits that read back the same, '1.0', '1e-05'.
std::string python_float_repr(double d);
// Python's str repr: single quotes unless the text holds one and no double quote.
std::string python_string_repr(std::string_view s);

}  // namespace pagedchat::jinja
