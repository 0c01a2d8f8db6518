#pragma once
// Splitting a Jinja template into text and tags, and a tag's inside into tokens, with the
// whitespace rules Hugging Face renders chat templates under (trim_blocks and lstrip_blocks on,
// '-' and '+' at a tag's edges). Comments are dropped here; {% raw %} becomes text.

#include <string>
#include <string_view>
#include <vector>

namespace pagedchat::jinja {

struct Piece {
  enum class Kind { kText, kOutput, kStatement };  // text, {{ ... }}, {% ... %}
  Kind kind;
  std::string body;  // the text, or what is between the delimiters (without '-' / '+')
  int line;          // where the piece starts, 1-based
};

// Throws Error("line N: ...") for a tag left open.
std::vector<Piece> split_template(std::string_view source);

struct Token {
  enum class Kind { kName, kString, kInteger, kFloat, kOperator, kEnd };
  Kind kind;
  std::string text;  // a name, an operator, a string's decoded value, a number's digits
  int line;
};

// The tokens of one tag's inside, ending with kEnd. Throws Error for a character Jinja has no
// token for or a string left open.
std::vector<Token> tokenize_expression(std::string_view body, int line);

}  // namespace pagedchat::jinja
