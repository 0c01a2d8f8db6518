#pragma once
// GBNF, the grammar notation of llama.cpp's server (its `grammar` field), read into a Grammar
// (grammar.h), so its users' grammars work here as written:
//
//   root   ::= object                     # a rule; `#` starts a comment
//   object ::= "{" ws ( pair ( "," ws pair )* )? "}"
//   pair   ::= string ":" ws value
//   char   ::= [^"\\\x7F\x00-\x1F] | "\\" ["\\/bfnrt]    # classes, ranges, negation, escapes
//   digits ::= [0-9]{1,16} "."? .         # repetitions *, +, ?, {m}, {m,}, {m,n}; `.` any char
//
// A rule's alternatives continue past a line's end only inside parentheses. Names are letters,
// digits, '-' and '_'. Refused, with the line and column: a syntax error, a rule used but never
// defined, no root rule, a repetition past kMaxRepetition, and left recursion (a rule that can
// reach itself before reading a character: matching it would never end).

#include <string_view>

#include "engine/grammar/grammar.h"

namespace pagedchat::grammar {

inline constexpr int kMaxRepetition = 10000;

// Throws Error ("GBNF line 3, column 12: expected '::='").
Grammar parse_gbnf(std::string_view text, std::string_view root = "root");

// The grammar back in GBNF (generated rules written as the parser named them): for messages
// and tests (parse_gbnf(to_gbnf(g)) is g again).
std::string to_gbnf(const Grammar& g);

}  // namespace pagedchat::grammar
