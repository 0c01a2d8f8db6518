#pragma once
// A parsed template: expressions and statements, as plain data the renderer walks.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/chat/jinja/value.h"

namespace pagedchat::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,   // value
    kName,      // name
    kList,      // args: the items
    kTuple,     // args: the items (a list at run time)
    kDict,      // args: key, value, key, value, ...
    kAttribute, // args[0].name
    kItem,      // args[0][args[1]]
    kSlice,     // args[0][args[1]:args[2]:args[3]] (null for a part left out)
    kCall,      // args[0](args[1..], kwargs)
    kFilter,    // args[0] | name(args[1..], kwargs)
    kTest,      // args[0] is [not] name(args[1..])
    kUnary,     // name ("-", "+", "not") args[0]
    kBinary,    // args[0] name args[1]: + - * / // % ** ~ in "not in" and or
    kCompare,   // args[0] ops[0] args[1] ops[1] args[2] ...: Python's chained == != < <= > >=
    kCondition, // args[0] if args[1] else args[2] (args[2] null: undefined)
  };
  Kind kind;
  int line = 0;
  Value value;
  std::string name;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  bool negated = false;  // is not
  std::vector<std::string> ops;  // kCompare
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct Node {
  enum class Kind {
    kText,      // text
    kOutput,    // {{ expr }}
    kIf,        // branches: (condition, body); a null condition is the else
    kFor,       // for targets in expr [if filter] body [else else_body]
    kSet,       // set targets = expr; set targets[0].attribute = expr
    kSetBlock,  // set targets[0] body endset (the body's output, filtered by `filter`)
    kMacro,     // macro name(params = defaults) body
    kBreak,
    kContinue,
    kFilterBlock,  // filter body, `filter` applied to its output
    kPlainBlock,   // a body rendered as it stands ({% generation %})
    kWith,         // with targets = defaults...: body in a scope of its own
    kCallBlock,    // call expr: body is caller() for the macro expr calls
  };
  Kind kind;
  int line = 0;
  std::string text;
  ExprPtr expr;
  std::vector<std::pair<ExprPtr, Body>> branches;
  std::vector<std::string> targets;
  std::string attribute;
  ExprPtr filter;  // kFor: the loop's if; kSetBlock / kFilterBlock: a kFilter chain on a kName "__body__"
  Body body, else_body;
  std::string name;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;  // one per param, null where it has none (kWith: the values)
  bool takes_varargs = false;     // kMacro: its body names varargs / kwargs, so extra arguments land there
  bool takes_kwargs = false;
};

}  // namespace pagedchat::jinja
