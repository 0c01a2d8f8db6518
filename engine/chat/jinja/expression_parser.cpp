// Expressions inside a tag (see expression_parser.h).
#include "engine/chat/jinja/expression_parser.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <set>

#include "engine/chat/jinja/builtins.h"
#include "engine/common/error.h"

namespace pagedchat::jinja {
namespace {

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

}  // namespace

NestingGuard::NestingGuard(int& depth, int line) : depth_(depth) {
  if (++depth_ > kMaxNesting) {
    --depth_;
    throw Error(format("line %d: expressions or blocks nested deeper than %d", line, kMaxNesting));
  }
}

bool Expressions::is_op(std::string_view op, size_t ahead) const {
  return peek(ahead).kind == Token::Kind::kOperator && peek(ahead).text == op;
}

bool Expressions::is_name(std::string_view n, size_t ahead) const {
  return peek(ahead).kind == Token::Kind::kName && peek(ahead).text == n;
}

void Expressions::error(const std::string& what) const {
  throw Error(format("line %d: %s", peek().line, what.c_str()));
}

std::string Expressions::describe(const Token& t) const {
  return t.kind == Token::Kind::kEnd ? std::string("the end of the tag") : "'" + t.text + "'";
}

void Expressions::expect_op(std::string_view op) {
  if (!is_op(op)) error("expected '" + std::string(op) + "', found " + describe(peek()));
  next();
}

std::string Expressions::expect_name() {
  if (peek().kind != Token::Kind::kName) error("expected a name, found " + describe(peek()));
  return next().text;
}

void Expressions::expect_end(std::string_view tag) {
  if (!at_end()) error("unexpected " + describe(peek()) + " in {% " + std::string(tag) + " %}");
}

ExprPtr Expressions::expression(bool with_condition) {
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

ExprPtr Expressions::tuple(bool with_condition) {
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

std::vector<std::string> Expressions::targets() {
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

ExprPtr Expressions::make(Expr::Kind k, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = k;
  e->line = line;
  return e;
}

ExprPtr Expressions::binary(std::string op, ExprPtr a, ExprPtr b, int line) {
  auto e = make(Expr::Kind::kBinary, line);
  e->name = std::move(op);
  e->args.push_back(std::move(a));
  e->args.push_back(std::move(b));
  return e;
}

ExprPtr Expressions::or_expr() {
  ExprPtr e = and_expr();
  while (is_name("or")) {
    const int line = next().line;
    e = binary("or", std::move(e), and_expr(), line);
  }
  return e;
}

ExprPtr Expressions::and_expr() {
  ExprPtr e = not_expr();
  while (is_name("and")) {
    const int line = next().line;
    e = binary("and", std::move(e), not_expr(), line);
  }
  return e;
}

ExprPtr Expressions::not_expr() {
  NestingGuard guard(depth_, peek().line);
  if (is_name("not")) {
    auto e = make(Expr::Kind::kUnary, next().line);
    e->name = "not";
    e->args.push_back(not_expr());
    return e;
  }
  return compare();
}

ExprPtr Expressions::compare() {
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

ExprPtr Expressions::add_sub() {
  ExprPtr e = concat();
  while (is_op("+") || is_op("-")) {
    const Token op = next();
    e = binary(op.text, std::move(e), concat(), op.line);
  }
  return e;
}

ExprPtr Expressions::concat() {
  ExprPtr e = mul_div();
  while (is_op("~")) {
    const int line = next().line;
    e = binary("~", std::move(e), mul_div(), line);
  }
  return e;
}

ExprPtr Expressions::mul_div() {
  ExprPtr e = power();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    const Token op = next();
    e = binary(op.text, std::move(e), power(), op.line);
  }
  return e;
}

ExprPtr Expressions::power() {
  ExprPtr e = unary(true);
  while (is_op("**")) {
    const int line = next().line;
    e = binary("**", std::move(e), unary(true), line);
  }
  return e;
}

ExprPtr Expressions::unary(bool with_filters) {
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

ExprPtr Expressions::primary() {
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

ExprPtr Expressions::literal(Value v, int line) {
  auto e = make(Expr::Kind::kLiteral, line);
  e->value = std::move(v);
  return e;
}

ExprPtr Expressions::postfix_filters(ExprPtr e, bool postfix_only) {
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

ExprPtr Expressions::subscript(ExprPtr subject) {
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

void Expressions::arguments(Expr& e) {
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

ExprPtr Expressions::call(ExprPtr callee) {
  auto e = make(Expr::Kind::kCall, peek().line);
  e->args.push_back(std::move(callee));
  arguments(*e);
  return e;
}

ExprPtr Expressions::filter(ExprPtr subject) {
  const int line = next().line;  // |
  auto e = make(Expr::Kind::kFilter, line);
  e->name = expect_name();
  while (is_op(".")) {
    next();
    e->name += '.';
    e->name += expect_name();
  }
  if (!is_known_filter(e->name)) error("the filter '" + e->name + "' is not supported");
  e->args.push_back(std::move(subject));
  if (is_op("(")) arguments(*e);
  return e;
}

ExprPtr Expressions::test(ExprPtr subject) {
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

}  // namespace pagedchat::jinja
