// Jinja's statements (see parser.h): text, {{ }} and {% %} pieces into a tree; each tag's
// expressions are read by expression_parser.h.
#include "engine/chat/jinja/parser.h"

#include <set>

#include "engine/chat/jinja/expression_parser.h"
#include "engine/chat/jinja/lexer.h"
#include "engine/common/error.h"

namespace pagedchat::jinja {
namespace {

constexpr size_t kMaxTagTokens = 2000;  // a chain of operators builds a tree as deep as it is long


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
