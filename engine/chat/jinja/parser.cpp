// Jinja's grammar (see parser.h). Precedence, loosest first, as jinja2 has it: conditional,
// or, and, not, comparisons and 'in', + -, ~, * / // %, **, unary -, then postfix (. [] ())
// and filters / tests.
#include "engine/chat/jinja/parser.h"

#include <cerrno>
#include <cstdlib>
#include <set>

#include "engine/chat/jinja/builtins.h"
#include "engine/chat/jinja/lexer.h"
#include "engine/common/error.h"

namespace pagedchat::jinja {
namespace {

// Nesting past this (brackets, unary signs, blocks) is refused rather than allowed to exhaust the
// stack: real templates nest a handful deep.
constexpr int kMaxNesting = 200;
constexpr size_t kMaxTagTokens = 2000;

int64_t integer_of(const Token& t) {
  try {
    return static_cast<int64_t>(std::stoll(t.text));
  } catch (const std::exception&) {
    throw Error(format("line %d: the integer %s does not fit in 64 bits", t.line, t.text.c_str()));
  }
}

double float_of(const Token& t) {
  errno = 0;
  return std::strtod(t.text.c_str(), nullptr);  // 1e999 is inf, as in Python
}

class NestingGuard {
 public:
  NestingGuard(int& depth, int line) : depth_(depth) {
    if (++depth_ > kMaxNesting) {
      --depth_;
      throw Error(format("line %d: expressions or blocks nested deeper than %d", line, kMaxNesting));
    }
  }
  ~NestingGuard() { --depth_; }
  NestingGuard(const NestingGuard&) = delete;
  NestingGuard& operator=(const NestingGuard&) = delete;

 private:
  int& depth_;
};

class Expressions {
 public:
  explicit Expressions(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  const Token& peek(size_t ahead = 0) const { return t_[std::min(i_ + ahead, t_.size() - 1)]; }
  bool at_end() const { return peek().kind == Token::Kind::kEnd; }
  bool is_op(std::string_view op, size_t ahead = 0) const {
    return peek(ahead).kind == Token::Kind::kOperator && peek(ahead).text == op;
  }
  bool is_name(std::string_view n, size_t ahead = 0) const {
    return peek(ahead).kind == Token::Kind::kName && peek(ahead).text == n;
  }
  Token next() { return t_[std::min(i_++, t_.size() - 1)]; }
  [[noreturn]] void error(const std::string& what) const {
    throw Error(format("line %d: %s", peek().line, what.c_str()));
  }
  std::string describe(const Token& t) const {
    return t.kind == Token::Kind::kEnd ? std::string("the end of the tag") : "'" + t.text + "'";
  }
  void expect_op(std::string_view op) {
    if (!is_op(op)) error("expected '" + std::string(op) + "', found " + describe(peek()));
    next();
  }
  std::string expect_name() {
    if (peek().kind != Token::Kind::kName) error("expected a name, found " + describe(peek()));
    return next().text;
  }
  void expect_end(std::string_view tag) {
    if (!at_end()) error("unexpected " + describe(peek()) + " in {% " + std::string(tag) + " %}");
  }

  ExprPtr expression(bool with_condition = true) {
    NestingGuard guard(depth_, peek().line);
    ExprPtr e = or_expr();
    if (with_condition && is_name("if")) {
      const int line = next().line;
      ExprPtr cond = or_expr();
      ExprPtr otherwise;
      if (is_name("else")) {
        next();
        otherwise = expression();
      }
      auto c = make(Expr::Kind::kCondition, line);
      c->args.push_back(std::move(e));
      c->args.push_back(std::move(cond));
      c->args.push_back(std::move(otherwise));
      return c;
    }
    return e;
  }

  // a, b, c without brackets (for targets, {{ a, b }}); one item stays itself.
  ExprPtr tuple(bool with_condition = true) {
    const int line = peek().line;
    ExprPtr first = expression(with_condition);
    if (!is_op(",")) return first;
    auto t = make(Expr::Kind::kTuple, line);
    t->args.push_back(std::move(first));
    while (is_op(",")) {
      next();
      if (at_end() || is_name("in") || is_op("=") || is_op(")")) break;
      t->args.push_back(expression(with_condition));
    }
    return t;
  }

  // Names for `for x, y in` and `set a, b =`.
  std::vector<std::string> targets() {
    std::vector<std::string> names;
    const bool paren = is_op("(");
    if (paren) next();
    names.push_back(expect_name());
    while (is_op(",")) {
      next();
      names.push_back(expect_name());
    }
    if (paren) expect_op(")");
    return names;
  }

  ExprPtr filter_chain_on(ExprPtr subject) { return postfix_filters(std::move(subject), false); }

 private:
  static ExprPtr make(Expr::Kind k, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->line = line;
    return e;
  }
  static ExprPtr binary(std::string op, ExprPtr a, ExprPtr b, int line) {
    auto e = make(Expr::Kind::kBinary, line);
    e->name = std::move(op);
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return e;
  }

  ExprPtr or_expr() {
    ExprPtr e = and_expr();
    while (is_name("or")) {
      const int line = next().line;
      e = binary("or", std::move(e), and_expr(), line);
    }
    return e;
  }
  ExprPtr and_expr() {
    ExprPtr e = not_expr();
    while (is_name("and")) {
      const int line = next().line;
      e = binary("and", std::move(e), not_expr(), line);
    }
    return e;
  }
  ExprPtr not_expr() {
    NestingGuard guard(depth_, peek().line);
    if (is_name("not")) {
      auto e = make(Expr::Kind::kUnary, next().line);
      e->name = "not";
      e->args.push_back(not_expr());
      return e;
    }
    return compare();
  }
  ExprPtr compare() {
    ExprPtr e = add_sub();
    bool chaining = false;  // this call made e a chain (a parenthesized one is an operand)
    while (true) {
      const int line = peek().line;
      std::string op;
      if (peek().kind == Token::Kind::kOperator &&
          std::set<std::string>{"==", "!=", "<", "<=", ">", ">="}.count(peek().text)) {
        // a < b < c is a < b and b < c, as in Python.
        if (!chaining) {
          auto c = make(Expr::Kind::kCompare, line);
          c->args.push_back(std::move(e));
          e = std::move(c);
          chaining = true;
        }
        e->ops.push_back(next().text);
        e->args.push_back(add_sub());
        continue;
      } else if (is_name("in")) {
        next();
        op = "in";
      } else if (is_name("not") && is_name("in", 1)) {
        next();
        next();
        op = "not in";
      } else {
        return e;
      }
      e = binary(op, std::move(e), add_sub(), line);
      chaining = false;
    }
  }
  ExprPtr add_sub() {
    ExprPtr e = concat();
    while (is_op("+") || is_op("-")) {
      const Token op = next();
      e = binary(op.text, std::move(e), concat(), op.line);
    }
    return e;
  }
  ExprPtr concat() {
    ExprPtr e = mul_div();
    while (is_op("~")) {
      const int line = next().line;
      e = binary("~", std::move(e), mul_div(), line);
    }
    return e;
  }
  ExprPtr mul_div() {
    ExprPtr e = power();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token op = next();
      e = binary(op.text, std::move(e), power(), op.line);
    }
    return e;
  }
  ExprPtr power() {
    ExprPtr e = unary(true);
    while (is_op("**")) {
      const int line = next().line;
      e = binary("**", std::move(e), unary(true), line);
    }
    return e;
  }
  ExprPtr unary(bool with_filters) {
    NestingGuard guard(depth_, peek().line);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      const Token op = next();
      e = make(Expr::Kind::kUnary, op.line);
      e->name = op.text;
      e->args.push_back(unary(false));
    } else {
      e = primary();
    }
    return postfix_filters(std::move(e), !with_filters);
  }

  ExprPtr primary() {
    const Token t = next();
    switch (t.kind) {
      case Token::Kind::kName: {
        if (t.text == "true" || t.text == "True") return literal(Value(true), t.line);
        if (t.text == "false" || t.text == "False") return literal(Value(false), t.line);
        if (t.text == "none" || t.text == "None") return literal(Value::none(), t.line);
        auto e = make(Expr::Kind::kName, t.line);
        e->name = t.text;
        return e;
      }
      case Token::Kind::kString: {
        std::string s = t.text;
        while (peek().kind == Token::Kind::kString) s += next().text;  // 'a' 'b' is 'ab'
        return literal(Value::markup(s), t.line);
      }
      case Token::Kind::kInteger: return literal(Value(integer_of(t)), t.line);
      case Token::Kind::kFloat: return literal(Value(float_of(t)), t.line);
      case Token::Kind::kOperator:
        if (t.text == "(") {
          if (is_op(")")) {
            next();
            return make(Expr::Kind::kTuple, t.line);
          }
          ExprPtr inner = tuple();
          expect_op(")");
          return inner;
        }
        if (t.text == "[") {
          auto e = make(Expr::Kind::kList, t.line);
          while (!is_op("]")) {
            e->args.push_back(expression());
            if (!is_op(",")) break;
            next();
          }
          expect_op("]");
          return e;
        }
        if (t.text == "{") {
          auto e = make(Expr::Kind::kDict, t.line);
          while (!is_op("}")) {
            e->args.push_back(expression());
            expect_op(":");
            e->args.push_back(expression());
            if (!is_op(",")) break;
            next();
          }
          expect_op("}");
          return e;
        }
        break;
      case Token::Kind::kEnd: break;
    }
    --i_;
    error("unexpected " + describe(t));
  }

  ExprPtr literal(Value v, int line) {
    auto e = make(Expr::Kind::kLiteral, line);
    e->value = std::move(v);
    return e;
  }

  // .name, [key], [a:b:c], (args), | filter, is test, in the order they come.
  ExprPtr postfix_filters(ExprPtr e, bool postfix_only) {
    while (true) {
      if (is_op(".")) {
        const int line = next().line;
        auto a = make(Expr::Kind::kAttribute, line);
        if (peek().kind == Token::Kind::kInteger) {  // x.0 is x[0]
          a->kind = Expr::Kind::kItem;
          a->args.push_back(std::move(e));
          a->args.push_back(literal(Value(integer_of(next())), line));
        } else {
          a->name = expect_name();
          a->args.push_back(std::move(e));
        }
        e = std::move(a);
      } else if (is_op("[")) {
        e = subscript(std::move(e));
      } else if (is_op("(")) {
        e = call(std::move(e));
      } else if (!postfix_only && is_op("|")) {
        e = filter(std::move(e));
      } else if (!postfix_only && is_name("is")) {
        e = test(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr subscript(ExprPtr subject) {
    const int line = next().line;  // [
    ExprPtr parts[3];
    int colons = 0;
    while (!is_op("]")) {
      if (is_op(":")) {
        next();
        if (++colons > 2) error("a slice has at most three parts");
        continue;
      }
      if (parts[colons]) error("expected ':' or ']' in a subscript");
      parts[colons] = expression();
    }
    next();  // ]
    if (colons == 0) {
      if (!parts[0]) error("an empty subscript");
      auto e = make(Expr::Kind::kItem, line);
      e->args.push_back(std::move(subject));
      e->args.push_back(std::move(parts[0]));
      return e;
    }
    auto e = make(Expr::Kind::kSlice, line);
    e->args.push_back(std::move(subject));
    for (auto& p : parts) e->args.push_back(std::move(p));
    return e;
  }

  void arguments(Expr& e) {
    expect_op("(");
    while (!is_op(")")) {
      if (is_op("*") || is_op("**")) error("*args and **kwargs in a call are not supported");
      if (peek().kind == Token::Kind::kName && is_op("=", 1)) {
        std::string key = next().text;
        next();
        e.kwargs.emplace_back(std::move(key), expression());
      } else {
        if (!e.kwargs.empty()) error("a positional argument after a keyword argument");
        e.args.push_back(expression());
      }
      if (!is_op(",")) break;
      next();
    }
    expect_op(")");
  }

  ExprPtr call(ExprPtr callee) {
    auto e = make(Expr::Kind::kCall, peek().line);
    e->args.push_back(std::move(callee));
    arguments(*e);
    return e;
  }

  ExprPtr filter(ExprPtr subject) {
    const int line = next().line;  // |
    auto e = make(Expr::Kind::kFilter, line);
    e->name = expect_name();
    while (is_op(".")) {
      next();
      e->name += "." + expect_name();
    }
    if (!is_known_filter(e->name)) error("the filter '" + e->name + "' is not supported");
    e->args.push_back(std::move(subject));
    if (is_op("(")) arguments(*e);
    return e;
  }

  ExprPtr test(ExprPtr subject) {
    const int line = next().line;  // is
    auto e = make(Expr::Kind::kTest, line);
    if (is_name("not")) {
      next();
      e->negated = true;
    }
    e->name = expect_name();
    if (!is_known_test(e->name)) error("the test '" + e->name + "' is not supported");
    e->args.push_back(std::move(subject));
    if (is_op("(")) {
      arguments(*e);
    } else if ((peek().kind == Token::Kind::kString || peek().kind == Token::Kind::kInteger ||
                peek().kind == Token::Kind::kFloat || is_op("[") || is_op("{") ||
                (peek().kind == Token::Kind::kName && !is_name("else") && !is_name("or") &&
                 !is_name("and") && !is_name("is") && !is_name("if")))) {
      e->args.push_back(postfix_filters(primary(), true));
    }
    return e;
  }

  std::vector<Token> t_;
  size_t i_ = 0;
  int depth_ = 0;
};

class Statements {
 public:
  explicit Statements(std::vector<Piece> pieces) : p_(std::move(pieces)) {}

  Body parse() {
    Body body = until({}, nullptr);
    return body;
  }

 private:
  // Parses pieces into a body until a statement named in `stops`; leaves that statement's
  // tokens in `*stopped_by` (its name first).
  Body until(const std::set<std::string>& stops, std::unique_ptr<Expressions>* stopped_by,
             const char* opened_by = nullptr, int opened_line = 0) {
    Body body;
    while (i_ < p_.size()) {
      const Piece& piece = p_[i_++];
      if (piece.kind == Piece::Kind::kText) {
        auto n = node(Node::Kind::kText, piece.line);
        n->text = piece.body;
        body.push_back(std::move(n));
        continue;
      }
      std::vector<Token> tokens = tokenize_expression(piece.body, piece.line);
      // A chain of operators builds a tree as deep as it is long: bounded, as nesting is.
      if (tokens.size() > kMaxTagTokens)
        throw Error(format("line %d: a tag of more than %zu tokens", piece.line, kMaxTagTokens));
      auto x = std::make_unique<Expressions>(std::move(tokens));
      if (piece.kind == Piece::Kind::kOutput) {
        auto n = node(Node::Kind::kOutput, piece.line);
        n->expr = x->tuple();
        x->expect_end("{{ }}");
        body.push_back(std::move(n));
        continue;
      }
      if (x->peek().kind != Token::Kind::kName) x->error("a statement must start with its name");
      const std::string name = x->peek().text;
      if (stops.count(name)) {
        *stopped_by = std::move(x);
        return body;
      }
      x->next();
      body.push_back(statement(name, *x, piece.line));
    }
    if (opened_by) throw Error(format("line %d: {%% %s %%} is never closed", opened_line, opened_by));
    return body;
  }

  NodePtr statement(const std::string& name, Expressions& x, int line) {
    NestingGuard guard(depth_, line);
    if (name == "if") return if_statement(x, line);
    if (name == "for") return for_statement(x, line);
    if (name == "set") return set_statement(x, line);
    if (name == "macro") return macro_statement(x, line);
    if (name == "filter") return filter_block(x, line);
    if (name == "break" || name == "continue") {
      x.expect_end(name);
      if (loop_depth_ == 0) throw Error(format("line %d: '%s' outside loop", line, name.c_str()));
      return node(name == "break" ? Node::Kind::kBreak : Node::Kind::kContinue, line);
    }
    if (name == "with") return with_statement(x, line);
    if (name == "call") return call_block(x, line);
    if (name == "generation") {  // Hugging Face's mark for assistant tokens: renders as its body
      x.expect_end(name);
      auto n = node(Node::Kind::kPlainBlock, line);
      std::unique_ptr<Expressions> end;
      n->body = until({"endgeneration"}, &end, "generation", line);
      return n;
    }
    static const std::set<std::string> kKnownUnsupported = {
        "include", "import", "from", "extends", "block", "autoescape", "do", "trans"};
    if (kKnownUnsupported.count(name))
      throw Error(format("line %d: {%% %s %%} is not supported in chat templates here", line, name.c_str()));
    throw Error(format("line %d: unknown statement {%% %s %%}", line, name.c_str()));
  }

  NodePtr if_statement(Expressions& x, int line) {
    auto n = node(Node::Kind::kIf, line);
    ExprPtr cond = x.expression();
    x.expect_end("if");
    while (true) {
      std::unique_ptr<Expressions> stop;
      Body body = until({"elif", "else", "endif"}, &stop, "if", line);
      n->branches.emplace_back(std::move(cond), std::move(body));
      const std::string which = stop->next().text;
      if (which == "endif") {
        stop->expect_end("endif");
        return n;
      }
      if (which == "else") {
        stop->expect_end("else");
        std::unique_ptr<Expressions> end;
        Body otherwise = until({"endif"}, &end, "if", line);
        end->next();
        end->expect_end("endif");
        n->branches.emplace_back(nullptr, std::move(otherwise));
        return n;
      }
      cond = stop->expression();
      stop->expect_end("elif");
    }
  }

  NodePtr for_statement(Expressions& x, int line) {
    auto n = node(Node::Kind::kFor, line);
    n->targets = x.targets();
    if (!x.is_name("in")) x.error("expected 'in' in {% for %}");
    x.next();
    n->expr = x.tuple(false);
    if (x.is_name("if")) {
      x.next();
      n->filter = x.expression();
    }
    if (x.is_name("recursive")) x.error("recursive loops are not supported");
    x.expect_end("for");
    std::unique_ptr<Expressions> stop;
    ++loop_depth_;
    n->body = until({"else", "endfor"}, &stop, "for", line);
    --loop_depth_;
    if (stop->next().text == "else") {
      stop->expect_end("else");
      std::unique_ptr<Expressions> end;
      n->else_body = until({"endfor"}, &end, "for", line);
      stop = std::move(end);
      stop->next();
    }
    stop->expect_end("endfor");
    return n;
  }

  NodePtr set_statement(Expressions& x, int line) {
    const std::string first = x.expect_name();
    if (x.is_op(".")) {  // set ns.attr = value
      x.next();
      auto n = node(Node::Kind::kSet, line);
      n->targets = {first};
      n->attribute = x.expect_name();
      x.expect_op("=");
      n->expr = x.tuple();
      x.expect_end("set");
      return n;
    }
    std::vector<std::string> names = {first};
    while (x.is_op(",")) {
      x.next();
      names.push_back(x.expect_name());
    }
    if (x.is_op("=")) {
      x.next();
      auto n = node(Node::Kind::kSet, line);
      n->targets = std::move(names);
      n->expr = x.tuple();
      x.expect_end("set");
      return n;
    }
    // {% set name %}...{% endset %}, optionally | filters
    if (names.size() != 1) x.error("a block {% set %} takes one name");
    auto n = node(Node::Kind::kSetBlock, line);
    n->targets = std::move(names);
    n->filter = body_filters(x);
    x.expect_end("set");
    std::unique_ptr<Expressions> end;
    n->body = until({"endset"}, &end, "set", line);
    end->next();
    end->expect_end("endset");
    return n;
  }

  // The filters of {% filter upper %} or {% set x | trim %}, applied to a name standing for
  // the block's output.
  ExprPtr body_filters(Expressions& x) {
    auto subject = std::make_unique<Expr>();
    subject->kind = Expr::Kind::kName;
    subject->name = "__body__";
    subject->line = x.peek().line;
    if (x.at_end()) return nullptr;
    return x.filter_chain_on(std::move(subject));
  }

  NodePtr filter_block(Expressions& x, int line) {
    auto n = node(Node::Kind::kFilterBlock, line);
    // {% filter upper %}: the names read as `__body__ | upper`.
    std::vector<Token> tokens = {{Token::Kind::kOperator, "|", line}};
    while (!x.at_end()) tokens.push_back(x.next());
    tokens.push_back({Token::Kind::kEnd, "", line});
    Expressions chain(std::move(tokens));
    n->filter = body_filters(chain);
    chain.expect_end("filter");
    std::unique_ptr<Expressions> end;
    n->body = until({"endfilter"}, &end, "filter", line);
    end->next();
    end->expect_end("endfilter");
    return n;
  }

  NodePtr macro_statement(Expressions& x, int line) {
    auto n = node(Node::Kind::kMacro, line);
    n->name = x.expect_name();
    x.expect_op("(");
    while (!x.is_op(")")) {
      n->params.push_back(x.expect_name());
      if (x.is_op("=")) {
        x.next();
        n->defaults.push_back(x.expression());
      } else {
        n->defaults.push_back(nullptr);
      }
      if (!x.is_op(",")) break;
      x.next();
    }
    x.expect_op(")");
    x.expect_end("macro");
    std::unique_ptr<Expressions> end;
    const int loops_outside = loop_depth_;
    loop_depth_ = 0;  // a macro is a function of its own: no loop to break out of
    n->body = until({"endmacro"}, &end, "macro", line);
    loop_depth_ = loops_outside;
    n->takes_varargs = names(n->body, "varargs");
    n->takes_kwargs = names(n->body, "kwargs");
    end->next();
    if (!end->at_end()) end->next();  // {% endmacro name %}
    end->expect_end("endmacro");
    return n;
  }

  // {% with a = 1, b = x %} ... {% endwith %}
  NodePtr with_statement(Expressions& x, int line) {
    auto n = node(Node::Kind::kWith, line);
    while (!x.at_end()) {
      n->params.push_back(x.expect_name());
      x.expect_op("=");
      n->defaults.push_back(x.expression());
      if (!x.is_op(",")) break;
      x.next();
    }
    x.expect_end("with");
    std::unique_ptr<Expressions> end;
    n->body = until({"endwith"}, &end, "with", line);
    end->next();
    end->expect_end("endwith");
    return n;
  }

  // {% call macro(args) %} body {% endcall %}: the macro's caller() renders the body.
  NodePtr call_block(Expressions& x, int line) {
    if (x.is_op("(")) x.error("{% call(args) %} with caller arguments is not supported");
    auto n = node(Node::Kind::kCallBlock, line);
    n->expr = x.expression();
    if (n->expr->kind != Expr::Kind::kCall) x.error("{% call %} needs a macro call");
    x.expect_end("call");
    std::unique_ptr<Expressions> end;
    n->body = until({"endcall"}, &end, "call", line);
    end->next();
    end->expect_end("endcall");
    return n;
  }

  // Whether a body refers to `name` anywhere (jinja2 decides a macro's varargs this way).
  static bool names(const Expr& e, std::string_view name) {
    if (e.kind == Expr::Kind::kName && e.name == name) return true;
    for (const ExprPtr& a : e.args)
      if (a && names(*a, name)) return true;
    for (const auto& [k, v] : e.kwargs)
      if (v && names(*v, name)) return true;
    return false;
  }
  static bool names(const Body& body, std::string_view name) {
    for (const NodePtr& n : body) {
      if (n->expr && names(*n->expr, name)) return true;
      if (n->filter && names(*n->filter, name)) return true;
      for (const auto& [cond, b] : n->branches)
        if ((cond && names(*cond, name)) || names(b, name)) return true;
      for (const ExprPtr& d : n->defaults)
        if (d && names(*d, name)) return true;
      if (names(n->body, name) || names(n->else_body, name)) return true;
    }
    return false;
  }

  static NodePtr node(Node::Kind k, int line) {
    auto n = std::make_unique<Node>();
    n->kind = k;
    n->line = line;
    return n;
  }

  std::vector<Piece> p_;
  size_t i_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Body parse_template(std::string_view source) { return Statements(split_template(source)).parse(); }

}  // namespace pagedchat::jinja
