// Rendering a parsed template (see jinja_template.h): scopes as jinja2 has them (a for loop and
// a macro call open one, an if does not; a macro sees its arguments and the template's top
// level), Python's operators, and the globals chat templates call.
#include "engine/chat/jinja/jinja_template.h"

#include <chrono>
#include <climits>
#include <cmath>
#include <map>
#include <optional>

#include "engine/chat/jinja/builtins.h"
#include "engine/chat/jinja/parser.h"

namespace pagedchat::jinja {
namespace {

constexpr int kMaxDepth = 256;  // macro calls within calls: a template that recurses for ever stops here
// A prompt is kilobytes; a template that doubles a string in a loop stops here, not at the OOM killer.
constexpr size_t kMaxText = size_t{16} << 20;
constexpr size_t kMaxItems = size_t{1} << 20;
// Every statement run and expression evaluated is a step. A long real conversation takes tens of
// thousands; a template that loops in loops (or calls macros by the billion) stops here instead
// of pinning a core for good, and so does one whose steps are each slow (kTimeLimit, checked
// every kClockEvery steps).
constexpr int64_t kMaxSteps = 1'000'000;
constexpr int64_t kClockEvery = 64;

bool holds_namespace(const Value& v) {
  if (v.is_dict() && v.as_dict().is_namespace) return true;
  if (v.is_list())
    for (const Value& x : v.as_list())
      if (holds_namespace(x)) return true;
  if (v.is_dict())
    for (const auto& [k, x] : v.as_dict().entries)
      if (holds_namespace(x)) return true;
  return false;
}

const PromptText& bounded(const PromptText& t) {
  if (t.size() > kMaxText) throw RenderBudgetExceeded("the template's text grows past 16 MiB");
  return t;
}

const List& bounded(const List& l) {
  if (l.size() > kMaxItems) throw RenderBudgetExceeded("the template builds a list of more than a million items");
  return l;
}

// An Error from inside a node, already prefixed with its line.
class LineError : public Error {
 public:
  explicit LineError(const std::string& what) : Error(what) {}
};

class Renderer {
 public:
  Renderer(const Dict& context, const RenderOptions& options) : options_(options) {
    scopes_.emplace_back();
    install_globals();
    for (const auto& [k, v] : context.entries) scopes_[0][k.str()] = v;
  }

  PromptText run(const Body& body) {
    started_ = std::chrono::steady_clock::now();
    PromptText out;
    exec(body, out);
    return out;
  }

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  using Scope = std::map<std::string, Value, std::less<>>;

  void install_globals() {
    Scope& g = scopes_[0];
    g["range"] = Value::function("range", [](CallArgs& a) {
      int64_t start = 0, stop, step = 1;
      if (a.positional.size() == 1) {
        stop = a.positional[0].as_int();
      } else if (a.positional.size() >= 2) {
        start = a.positional[0].as_int();
        stop = a.positional[1].as_int();
        if (a.positional.size() > 2) step = a.positional[2].as_int();
      } else {
        throw Error("range() takes one to three integers");
      }
      if (step == 0) throw Error("range() step must not be zero");
      // The item count in 128 bits: stop - start overflows 64 for range(-9e18, 9e18).
      const __int128 span = static_cast<__int128>(stop) - start;
      const __int128 count = step > 0 ? (span + step - 1) / step : (span + step + 1) / step;
      if (count > 100000) throw RenderBudgetExceeded("range() of more than 100000 items");
      List out;
      for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(Value(i));
      return Value(std::move(out));
    });
    g["namespace"] = Value::function("namespace", [](CallArgs& a) {
      auto d = std::make_shared<Dict>();
      d->is_namespace = true;
      if (!a.positional.empty() && a.positional[0].is_dict())
        for (const auto& [k, v] : a.positional[0].as_dict().entries) d->set(k, v);
      for (const auto& [k, v] : a.keyword) d->set(PromptText().markup(k), v);
      return Value(d);
    });
    g["dict"] = Value::function("dict", [](CallArgs& a) {
      auto d = std::make_shared<Dict>();
      for (const auto& [k, v] : a.keyword) d->set(PromptText().markup(k), v);
      return Value(d);
    });
    g["raise_exception"] = Value::function("raise_exception", [](CallArgs& a) -> Value {
      throw TemplateRaised(a.get(0, "message").to_text().str());
    });
    g["strftime_now"] = Value::function("strftime_now", [this](CallArgs& a) {
      const std::time_t t = options_.now ? options_.now() : std::time(nullptr);
      std::tm tm{};
      localtime_r(&t, &tm);
      char buf[256];
      const size_t n = std::strftime(buf, sizeof buf, a.get(0, "format").to_text().str().c_str(), &tm);
      return Value::markup(std::string(buf, n));
    });
  }

  // ---- statements ----

  Flow exec(const Body& body, PromptText& out) {
    for (const NodePtr& n : body) {
      const Flow f = exec_node(*n, out);
      if (f != Flow::kNormal) return f;
    }
    return Flow::kNormal;
  }

  Flow exec_node(const Node& n, PromptText& out) {
    try {
      return exec_node_unguarded(n, out);
    } catch (const LineError&) {
      throw;
    } catch (const TemplateRaised&) {
      throw;
    } catch (const RenderBudgetExceeded&) {
      throw;  // the render as a whole went too far, not this line
    } catch (const Error& e) {
      throw LineError(format("line %d: %s", n.line, e.what()));
    }
  }

  // One step of the render's budget (kMaxSteps, and the time limit).
  void step() {
    if (++steps_ > kMaxSteps)
      throw RenderBudgetExceeded(format("the template ran past %lld steps", static_cast<long long>(kMaxSteps)));
    if (steps_ % kClockEvery == 0 &&
        std::chrono::steady_clock::now() - started_ > std::chrono::duration<double>(options_.time_limit_s))
      throw RenderBudgetExceeded(format("the template ran for more than %g s", options_.time_limit_s));
  }

  Flow exec_node_unguarded(const Node& n, PromptText& out) {
    step();
    switch (n.kind) {
      case Node::Kind::kText: bounded(out.markup(n.text)); return Flow::kNormal;
      case Node::Kind::kOutput: bounded(out.append(eval(*n.expr).to_text())); return Flow::kNormal;
      case Node::Kind::kIf:
        for (const auto& [cond, body] : n.branches)
          if (!cond || eval(*cond).truthy()) return exec(body, out);
        return Flow::kNormal;
      case Node::Kind::kFor: return exec_for(n, out);
      case Node::Kind::kSet: exec_set(n); return Flow::kNormal;
      case Node::Kind::kSetBlock: {
        PromptText captured;
        exec(n.body, captured);
        assign(n.targets[0], filtered_body(n, std::move(captured)));
        return Flow::kNormal;
      }
      case Node::Kind::kFilterBlock: {
        PromptText captured;
        exec(n.body, captured);
        out.append(filtered_body(n, std::move(captured)).to_text());
        return Flow::kNormal;
      }
      case Node::Kind::kPlainBlock: return exec(n.body, out);
      case Node::Kind::kWith: {
        Scope scope;
        for (size_t i = 0; i < n.params.size(); ++i) scope[n.params[i]] = eval(*n.defaults[i]);
        scopes_.push_back(std::move(scope));
        const Flow f = exec(n.body, out);
        scopes_.pop_back();
        return f;
      }
      case Node::Kind::kCallBlock: {
        const Expr& call = *n.expr;
        const Value f = eval(*call.args[0]);
        if (!f.is_function()) throw Error("{% call %} needs a macro");
        CallArgs a = arguments(call, 1);
        // caller() renders the block where it stands, in the scope it was written in.
        const size_t frame = frame_;
        const size_t depth = scopes_.size();
        a.keyword.emplace_back("caller", Value::function("caller", [this, &n, frame, depth](CallArgs&) {
          const size_t saved = frame_;
          frame_ = frame;
          std::vector<Scope> above(std::make_move_iterator(scopes_.begin() + static_cast<std::ptrdiff_t>(depth)),
                                   std::make_move_iterator(scopes_.end()));
          scopes_.resize(depth);
          PromptText body;
          exec(n.body, body);
          for (Scope& sc : above) scopes_.push_back(std::move(sc));
          frame_ = saved;
          return Value(std::move(body));
        }));
        out.append(f.as_function().call(a).to_text());
        return Flow::kNormal;
      }
      case Node::Kind::kMacro: define_macro(n); return Flow::kNormal;
      case Node::Kind::kBreak: return Flow::kBreak;
      case Node::Kind::kContinue: return Flow::kContinue;
    }
    return Flow::kNormal;
  }

  Value filtered_body(const Node& n, PromptText captured) {
    if (!n.filter) return Value(std::move(captured));
    scopes_.emplace_back();
    scopes_.back()["__body__"] = Value(std::move(captured));
    Value v = eval(*n.filter);
    scopes_.pop_back();
    return v;
  }

  void bind(const std::vector<std::string>& targets, const Value& v) {
    if (targets.size() == 1) {
      assign(targets[0], v);
      return;
    }
    const List items = iterate(v);
    if (items.size() != targets.size())
      throw Error(format("cannot unpack %zu values into %zu names", items.size(), targets.size()));
    for (size_t i = 0; i < targets.size(); ++i) assign(targets[i], items[i]);
  }

  Flow exec_for(const Node& n, PromptText& out) {
    List items = iterate(eval(*n.expr));
    scopes_.emplace_back();
    if (n.filter) {
      List kept;
      for (const Value& item : items) {
        bind(n.targets, item);
        if (eval(*n.filter).truthy()) kept.push_back(item);
      }
      items = std::move(kept);
    }
    const int64_t len = static_cast<int64_t>(items.size());
    // jinja2 marks the loop as having run at the end of an iteration's body, so an empty loop,
    // or a break or continue in every iteration so far, renders the else; and each iteration's sets are
    // its own (an outer name reads as the outer value until set in that iteration).
    bool ran = false;
    auto last_changed = std::make_shared<std::optional<List>>();
    for (int64_t i = 0; i < len; ++i) {
      step();  // an iteration is a step even when its body is empty
      scopes_.back().clear();
      auto loop = std::make_shared<Dict>();
      auto put = [&](const char* k, Value v) { loop->entries.emplace_back(PromptText().markup(k), std::move(v)); };
      put("index", Value(i + 1));
      put("index0", Value(i));
      put("revindex", Value(len - i));
      put("revindex0", Value(len - i - 1));
      put("first", Value(i == 0));
      put("last", Value(i == len - 1));
      put("length", Value(len));
      put("depth", Value(int64_t{1}));
      put("depth0", Value(int64_t{0}));
      put("previtem", i > 0 ? items[i - 1] : Value(Undefined{"loop.previtem"}));
      put("nextitem", i + 1 < len ? items[i + 1] : Value(Undefined{"loop.nextitem"}));
      put("cycle", Value::function("loop.cycle", [i](CallArgs& a) {
            if (a.positional.empty()) throw Error("loop.cycle() needs at least one value");
            return a.positional[static_cast<size_t>(i) % a.positional.size()];
          }));
      put("changed", Value::function("loop.changed", [last_changed](CallArgs& a) {
            const List now = a.positional;
            const bool changed = !*last_changed || !Value(**last_changed).equals(Value(now));
            *last_changed = now;
            return Value(changed);
          }));
      scopes_.back()["loop"] = Value(loop);
      bind(n.targets, items[i]);
      const Flow f = exec(n.body, out);
      if (f == Flow::kBreak) break;
      if (f == Flow::kNormal) ran = true;
    }
    scopes_.pop_back();
    if (!ran) exec(n.else_body, out);
    return Flow::kNormal;
  }

  void exec_set(const Node& n) {
    Value v = eval(*n.expr);
    if (n.attribute.empty()) {
      bind(n.targets, v);
      return;
    }
    const Value target = lookup(n.targets[0]);
    if (!target.is_dict() || !target.as_dict().is_namespace)
      throw Error(format("cannot set '%s.%s': '%s' is not a namespace()", n.targets[0].c_str(), n.attribute.c_str(),
                         n.targets[0].c_str()));
    // A namespace that held itself would print, compare and serialize for ever.
    if (holds_namespace(v))
      throw Error(format("cannot set '%s.%s' to a namespace()", n.targets[0].c_str(), n.attribute.c_str()));
    target.as_dict().set(PromptText().markup(n.attribute), std::move(v));
  }

  void define_macro(const Node& n) {
    assign(n.name, Value::function(n.name, [this, &n](CallArgs& a) { return call_macro(n, a); }));
  }

  Value call_macro(const Node& n, CallArgs& a) {
    if (a.positional.size() > n.params.size() && !n.takes_varargs)
      throw Error(format("macro '%s' takes %zu arguments, %zu given", n.name.c_str(), n.params.size(), a.positional.size()));
    auto kwargs = std::make_shared<Dict>();
    Value caller = Value(Undefined{"caller"});
    for (const auto& [k, v] : a.keyword) {
      if (k == "caller") {
        caller = v;
      } else if (std::find(n.params.begin(), n.params.end(), k) == n.params.end()) {
        if (!n.takes_kwargs) throw Error(format("macro '%s' has no argument '%s'", n.name.c_str(), k.c_str()));
        kwargs->set(PromptText().markup(k), v);
      }
    }
    if (depth_ >= kMaxDepth) throw RenderBudgetExceeded(format("macro calls nested deeper than %d", kMaxDepth));
    // No unwinding on a throw: an error ends the whole render (nothing in a template catches it).
    const size_t saved_frame = frame_;
    scopes_.emplace_back();
    frame_ = scopes_.size() - 1;
    ++depth_;
    for (size_t i = 0; i < n.params.size(); ++i) {
      Value v = a.get(i, n.params[i]);
      if (v.is_undefined() && n.defaults[i]) v = eval(*n.defaults[i]);
      if (v.is_undefined()) v = Value(Undefined{n.params[i]});
      scopes_.back()[n.params[i]] = std::move(v);
    }
    if (n.takes_varargs) {
      List extra;
      for (size_t i = n.params.size(); i < a.positional.size(); ++i) extra.push_back(a.positional[i]);
      scopes_.back()["varargs"] = Value::tuple(std::move(extra));
    }
    if (n.takes_kwargs) scopes_.back()["kwargs"] = Value(kwargs);
    scopes_.back()["caller"] = caller;
    PromptText out;
    exec(n.body, out);
    --depth_;
    scopes_.pop_back();
    frame_ = saved_frame;
    return Value(std::move(out));
  }

  // ---- names ----

  Value lookup(std::string_view name) const {
    for (size_t i = scopes_.size(); i-- > frame_;) {
      const auto it = scopes_[i].find(name);
      if (it != scopes_[i].end()) return it->second;
      if (i == 0) break;
    }
    const auto it = scopes_[0].find(name);
    if (it != scopes_[0].end()) return it->second;
    return Value(Undefined{std::string(name)});
  }

  void assign(const std::string& name, Value v) { scopes_.back()[name] = std::move(v); }

  // ---- expressions ----

  CallArgs arguments(const Expr& e, size_t first) {
    CallArgs a;
    for (size_t i = first; i < e.args.size(); ++i) a.positional.push_back(eval(*e.args[i]));
    for (const auto& [k, v] : e.kwargs) a.keyword.emplace_back(k, eval(*v));
    return a;
  }

  std::optional<int64_t> slice_part(const ExprPtr& e) {
    if (!e) return std::nullopt;
    const Value v = eval(*e);
    if (v.is_none()) return std::nullopt;
    if (!v.is_int() && !v.is_bool()) throw Error("slice indices must be integers");
    return v.as_int();
  }

  Value eval(const Expr& e) {
    step();
    switch (e.kind) {
      case Expr::Kind::kLiteral: return e.value;
      case Expr::Kind::kName: return lookup(e.name);
      case Expr::Kind::kList:
      case Expr::Kind::kTuple: {
        List items;
        for (const ExprPtr& x : e.args) items.push_back(eval(*x));
        return e.kind == Expr::Kind::kTuple ? Value::tuple(std::move(items)) : Value(std::move(items));
      }
      case Expr::Kind::kDict: {
        auto d = std::make_shared<Dict>();
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
          const Value k = eval(*e.args[i]);
          if (!k.is_string()) throw Error("dict keys must be strings here");
          d->set(k.as_string(), eval(*e.args[i + 1]));
        }
        return Value(d);
      }
      case Expr::Kind::kAttribute: return attribute_of(eval(*e.args[0]), e.name);
      case Expr::Kind::kItem: return item_of(eval(*e.args[0]), eval(*e.args[1]));
      case Expr::Kind::kSlice: {
        const Value obj = eval(*e.args[0]);
        return slice_of(obj, slice_part(e.args[1]), slice_part(e.args[2]), slice_part(e.args[3]));
      }
      case Expr::Kind::kCall: {
        const Value f = eval(*e.args[0]);
        if (!f.is_function()) {
          if (f.is_undefined()) throw Error(format("'%s' is undefined (called as a function)", f.undefined_name().c_str()));
          throw Error(format("'%s' object is not callable", f.type_name()));
        }
        CallArgs a = arguments(e, 1);
        return f.as_function().call(a);
      }
      case Expr::Kind::kFilter: {
        const Value subject = eval(*e.args[0]);
        return apply_filter(e.name, subject, arguments(e, 1));
      }
      case Expr::Kind::kTest: {
        const Value subject = eval(*e.args[0]);
        return Value(apply_test(e.name, subject, arguments(e, 1)) != e.negated);
      }
      case Expr::Kind::kUnary: {
        const Value v = eval(*e.args[0]);
        if (e.name == "not") return Value(!v.truthy());
        if (!v.is_number()) throw Error(format("bad operand type for unary %s: '%s'", e.name.c_str(), v.type_name()));
        if (e.name == "+") return v.is_float() ? v : Value(v.as_int());
        if (!v.is_float() && v.as_int() == INT64_MIN) throw Error("integer overflow: Python's integers are unbounded, ours are 64 bits");
        return v.is_float() ? Value(-v.as_double()) : Value(-v.as_int());
      }
      case Expr::Kind::kBinary: return binary(e);
      case Expr::Kind::kCompare: {
        Value left = eval(*e.args[0]);
        for (size_t i = 0; i < e.ops.size(); ++i) {
          Value right = eval(*e.args[i + 1]);
          const std::string& op = e.ops[i];
          bool holds;
          if (op == "==") holds = left.equals(right);
          else if (op == "!=") holds = !left.equals(right);
          else if (op == "<") holds = left.less(right);
          else if (op == ">") holds = right.less(left);
          else if (op == "<=") holds = !right.less(left);
          else holds = !left.less(right);
          if (!holds) return Value(false);
          left = std::move(right);
        }
        return Value(true);
      }
      case Expr::Kind::kCondition:
        if (eval(*e.args[1]).truthy()) return eval(*e.args[0]);
        return e.args[2] ? eval(*e.args[2]) : Value(Undefined{"the else of an if expression"});
    }
    return {};
  }

  Value binary(const Expr& e) {
    const std::string& op = e.name;
    if (op == "and") {
      Value a = eval(*e.args[0]);
      return a.truthy() ? eval(*e.args[1]) : a;
    }
    if (op == "or") {
      Value a = eval(*e.args[0]);
      return a.truthy() ? a : eval(*e.args[1]);
    }
    const Value a = eval(*e.args[0]);
    const Value b = eval(*e.args[1]);
    if (op == "~") return Value(bounded(PromptText(a.to_text()).append(b.to_text())));
    if (op == "in" || op == "not in") {
      CallArgs args;
      args.positional.push_back(b);
      return Value(apply_test("in", a, args) == (op == "in"));
    }
    return arithmetic(op, a, b);
  }

  static Value arithmetic(const std::string& op, const Value& a, const Value& b) {
    if (a.is_undefined() || b.is_undefined())
      throw Error(format("'%s' is undefined (in '%s')", (a.is_undefined() ? a : b).undefined_name().c_str(), op.c_str()));
    if (op == "+") {
      if (a.is_string() && b.is_string()) return Value(bounded(PromptText(a.as_string()).append(b.as_string())));
      if (a.is_list() && b.is_list()) {
        List l = a.as_list();
        l.insert(l.end(), b.as_list().begin(), b.as_list().end());
        return Value(bounded(l));
      }
    }
    if (op == "*" && (b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return arithmetic(op, b, a);
    if (op == "*" && (a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) {
      const int64_t n = b.as_int();
      // Nothing times anything, or anything times nothing or less, is empty at once (an empty
      // string times 10^18 must not loop 10^18 times).
      if (n <= 0 || (a.is_string() ? a.as_string().empty() : a.as_list().empty()))
        return a.is_string() ? Value(PromptText()) : Value(List{});
      auto too_many = [n](size_t each, size_t most) { return n > 0 && each > 0 && static_cast<uint64_t>(n) > most / each; };
      if (a.is_string()) {
        if (too_many(a.as_string().size(), kMaxText)) throw RenderBudgetExceeded("the template's text grows past 16 MiB");
        PromptText out;
        for (int64_t i = 0; i < n; ++i) out.append(a.as_string());
        return Value(out);
      }
      if (too_many(a.as_list().size(), kMaxItems)) throw RenderBudgetExceeded("the template builds a list of more than a million items");
      List l;
      for (int64_t i = 0; i < n; ++i) l.insert(l.end(), a.as_list().begin(), a.as_list().end());
      return Value(std::move(l));
    }
    if (op == "%" && a.is_string()) return Value(bounded(percent_format(a.as_string(), b)));
    if (!a.is_number() || !b.is_number())
      throw Error(format("unsupported operand type(s) for %s: '%s' and '%s'", op.c_str(), a.type_name(), b.type_name()));
    const bool ints = !a.is_float() && !b.is_float();
    if (op == "/") {
      if (b.as_double() == 0) throw Error("division by zero");
      return Value(a.as_double() / b.as_double());
    }
    if (op == "**") {
      if (ints && b.as_int() >= 0) {
        const int64_t base = a.as_int(), exp = b.as_int();
        if (base == 0 || base == 1) return Value(exp == 0 ? int64_t{1} : base);
        if (base == -1) return Value(exp % 2 ? int64_t{-1} : int64_t{1});
        int64_t r = 1;  // |base| >= 2: past 63 steps it has overflowed
        for (int64_t i = 0; i < exp; ++i)
          if (__builtin_mul_overflow(r, base, &r)) throw Error("integer overflow: Python's integers are unbounded, ours are 64 bits");
        return Value(r);
      }
      return Value(std::pow(a.as_double(), b.as_double()));
    }
    if (ints) {
      const int64_t x = a.as_int(), y = b.as_int();
      int64_t r = 0;
      const bool overflow = op == "+" ? __builtin_add_overflow(x, y, &r)
                            : op == "-" ? __builtin_sub_overflow(x, y, &r)
                            : op == "*" ? __builtin_mul_overflow(x, y, &r)
                                        : false;
      if (overflow) throw Error("integer overflow: Python's integers are unbounded, ours are 64 bits");
      if (op == "+" || op == "-" || op == "*") return Value(r);
      if (y == 0) throw Error("integer division or modulo by zero");
      if (x == INT64_MIN && y == -1) throw Error("integer overflow: Python's integers are unbounded, ours are 64 bits");
      // Python floors: -7 // 2 == -4, -7 % 2 == 1.
      int64_t q = x / y, m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) {
        --q;
        m += y;
      }
      return Value(op == "//" ? q : m);
    }
    const double x = a.as_double(), y = b.as_double();
    if (op == "+") return Value(x + y);
    if (op == "-") return Value(x - y);
    if (op == "*") return Value(x * y);
    if (y == 0) throw Error("float division or modulo by zero");
    if (op == "//") return Value(std::floor(x / y));
    const double r = std::fmod(x, y);
    return Value(r != 0 && ((r < 0) != (y < 0)) ? r + y : r);
  }

  const RenderOptions& options_;
  std::vector<Scope> scopes_;
  int64_t steps_ = 0;
  std::chrono::steady_clock::time_point started_;  // [0]: globals and the context; then loops and macro calls
  size_t frame_ = 0;           // the innermost macro call's scope: lookups do not see below it but [0]
  int depth_ = 0;
};

}  // namespace

Template Template::parse(std::string_view source) {
  Template t;
  t.body_ = std::make_shared<const Body>(parse_template(source));
  return t;
}

PromptText Template::render(const Dict& context, const RenderOptions& options) const {
  Renderer r(context, options);
  return r.run(*body_);
}

}  // namespace pagedchat::jinja
