#pragma once
// The expressions inside a tag: jinja2's grammar and precedence, loosest first: conditional, or,
// and, not, comparisons (chained, as Python's) and 'in', + -, ~, * / // %, **, unary -, then
// postfix (. [] ()) and filters / tests. Statements (parser.cpp) read their parts with it.

#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/jinja/ast.h"
#include "engine/chat/jinja/lexer.h"

namespace pagedchat::jinja {

// Nesting past this (brackets, unary signs, blocks) is refused rather than allowed to exhaust the
// stack: real templates nest a handful deep.
inline constexpr int kMaxNesting = 200;

class NestingGuard {
 public:
  NestingGuard(int& depth, int line);
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
  bool is_op(std::string_view op, size_t ahead = 0) const;
  bool is_name(std::string_view n, size_t ahead = 0) const;
  Token next() { return t_[std::min(i_++, t_.size() - 1)]; }
  [[noreturn]] void error(const std::string& what) const;
  std::string describe(const Token& t) const;
  void expect_op(std::string_view op);
  std::string expect_name();
  void expect_end(std::string_view tag);

  ExprPtr expression(bool with_condition = true);

  // a, b, c without brackets (for targets, {{ a, b }}); one item stays itself.
  ExprPtr tuple(bool with_condition = true);

  // Names for `for x, y in` and `set a, b =`.
  std::vector<std::string> targets();

  ExprPtr filter_chain_on(ExprPtr subject) { return postfix_filters(std::move(subject), false); }

 private:
  static ExprPtr make(Expr::Kind k, int line);
  static ExprPtr binary(std::string op, ExprPtr a, ExprPtr b, int line);

  ExprPtr or_expr();
  ExprPtr and_expr();
  ExprPtr not_expr();
  ExprPtr compare();
  ExprPtr add_sub();
  ExprPtr concat();
  ExprPtr mul_div();
  ExprPtr power();
  ExprPtr unary(bool with_filters);

  ExprPtr primary();

  ExprPtr literal(Value v, int line);

  // .name, [key], [a:b:c], (args), | filter, is test, in the order they come.
  ExprPtr postfix_filters(ExprPtr e, bool postfix_only);

  ExprPtr subscript(ExprPtr subject);

  void arguments(Expr& e);

  ExprPtr call(ExprPtr callee);

  ExprPtr filter(ExprPtr subject);

  ExprPtr test(ExprPtr subject);

  std::vector<Token> t_;
  size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace pagedchat::jinja
