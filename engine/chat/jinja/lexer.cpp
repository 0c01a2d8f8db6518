// Template text and tags, and the tokens inside a tag (see lexer.h).
#include "engine/chat/jinja/lexer.h"

#include <cctype>
#include <cstdint>

#include "engine/common/error.h"
#include "engine/tokenizer/utf8.h"

namespace pagedchat::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// The line of a position, counted on from the last one asked (the lexer asks in order), so a
// template of many tags is not scanned from its start for each.
class LineCounter {
 public:
  explicit LineCounter(std::string_view s) : s_(s) {}
  int operator()(size_t pos) {
    if (pos < at_) {
      at_ = 0;
      line_ = 1;
    }
    for (; at_ < pos && at_ < s_.size(); ++at_) line_ += s_[at_] == '\n';
    return line_;
  }

 private:
  std::string_view s_;
  size_t at_ = 0;
  int line_ = 1;
};

// Where the tag opened at `open` ends: the position of its closing delimiter. Quotes inside
// {{ }} and {% %} are skipped over, so '}}' in a string literal does not close the tag.
size_t find_close(std::string_view s, size_t from, char kind) {
  const char closer = kind == '{' ? '}' : kind;
  int open_brackets = 0;  // as jinja2's lexer balances them: '}}' inside {'a': {'b': 1}} does not close
  for (size_t i = from; i + 1 < s.size(); ++i) {
    const char c = s[i];
    if (kind != '#' && (c == '\'' || c == '"')) {
      for (++i; i < s.size() && s[i] != c; ++i)
        if (s[i] == '\\') ++i;
      continue;
    }
    if (kind != '#') {
      if (c == '(' || c == '[' || c == '{') {
        ++open_brackets;
        continue;
      }
      if (open_brackets > 0 && (c == ')' || c == ']' || c == '}')) {
        --open_brackets;
        continue;
      }
    }
    if (c == closer && s[i + 1] == '}') return i;
  }
  return std::string_view::npos;
}

void rstrip_all(std::string& s) {
  while (!s.empty() && is_space(s.back())) s.pop_back();
}

// lstrip_blocks: the spaces and tabs between the line's start and a block tag go.
void lstrip_line(std::string& s, bool line_starting) {
  const size_t nl = s.rfind('\n');
  const size_t from = nl == std::string::npos ? 0 : nl + 1;
  if (nl == std::string::npos && !line_starting) return;
  for (size_t i = from; i < s.size(); ++i)
    if (s[i] != ' ' && s[i] != '\t') return;
  s.resize(from);
}

std::string trim(std::string_view s) {
  size_t a = 0, b = s.size();
  while (a < b && is_space(s[a])) ++a;
  while (b > a && is_space(s[b - 1])) --b;
  return std::string(s.substr(a, b - a));
}

}  // namespace

std::vector<Piece> split_template(std::string_view src) {
  // jinja2 drops one newline at the end of a template (keep_trailing_newline is off).
  if (!src.empty() && src.back() == '\n') src.remove_suffix(1);
  std::vector<Piece> out;
  LineCounter line_at(src);
  std::string text;        // text since the last tag
  int text_line = 1;
  bool line_starting = true;  // the text so far begins a line (for lstrip_blocks)
  size_t pos = 0;
  auto flush_text = [&] {
    if (!text.empty()) out.push_back({Piece::Kind::kText, std::move(text), text_line});
    text.clear();
  };
  while (pos < src.size()) {
    const size_t open = src.find('{', pos);
    if (open == std::string_view::npos || open + 1 >= src.size()) {
      text.append(src.substr(pos));
      break;
    }
    const char kind = src[open + 1];
    if (kind != '{' && kind != '%' && kind != '#') {
      text.append(src.substr(pos, open + 1 - pos));
      pos = open + 1;
      continue;
    }
    text.append(src.substr(pos, open - pos));
    const int line = line_at(open);
    size_t inner = open + 2;
    const char left = inner < src.size() ? src[inner] : '\0';
    if (left == '-') {
      rstrip_all(text);
      ++inner;
    } else if (left == '+') {
      ++inner;
    } else if (kind != '{') {
      lstrip_line(text, line_starting);
    }
    const size_t close = find_close(src, inner, kind);
    if (close == std::string_view::npos)
      throw Error(format("line %d: a '{%c' tag is never closed", line, kind));
    size_t body_end = close;
    const char right = close > inner ? src[close - 1] : '\0';
    if (right == '-' || right == '+') --body_end;
    std::string body(src.substr(inner, body_end - inner));
    pos = close + 2;
    // After the tag: '-' eats all whitespace; trim_blocks eats one newline after a block or comment.
    auto after_tag = [&] {
      if (right == '-') {
        while (pos < src.size() && is_space(src[pos])) ++pos;
      } else if (kind != '{' && right != '+' && pos < src.size() && src[pos] == '\n') {
        ++pos;
      }
      line_starting = pos > 0 && src[pos - 1] == '\n';
    };
    if (kind == '#') {
      after_tag();
      continue;
    }
    if (kind == '%' && trim(body) == "raw") {
      // Everything up to {% endraw %} is text, tags and all. The newline after {% raw %} stays;
      // {% endraw %} strips and trims as any block tag.
      if (right == '-')
        while (pos < src.size() && is_space(src[pos])) ++pos;
      size_t search = pos;
      while (true) {
        const size_t at = src.find("{%", search);
        if (at == std::string_view::npos) throw Error(format("line %d: {%% raw %%} is never closed", line));
        size_t j = at + 2;
        const char raw_left = j < src.size() ? src[j] : '\0';
        if (raw_left == '-' || raw_left == '+') ++j;
        while (j < src.size() && is_space(src[j])) ++j;
        if (src.substr(j, 6) != "endraw") {
          search = at + 2;
          continue;
        }
        flush_text();
        std::string raw(src.substr(pos, at - pos));
        if (raw_left == '-') rstrip_all(raw);
        else if (raw_left != '+') lstrip_line(raw, false);
        text_line = line_at(pos);
        text = std::move(raw);
        flush_text();
        const size_t end_close = find_close(src, j, '%');
        if (end_close == std::string_view::npos) throw Error(format("line %d: {%% endraw %%} is never closed", line));
        const char raw_right = src[end_close - 1];
        pos = end_close + 2;
        if (raw_right == '-') {
          while (pos < src.size() && is_space(src[pos])) ++pos;
        } else if (raw_right != '+' && pos < src.size() && src[pos] == '\n') {
          ++pos;
        }
        line_starting = src[pos - 1] == '\n';
        break;
      }
      text_line = line_at(pos);
      continue;
    }
    flush_text();
    out.push_back({kind == '{' ? Piece::Kind::kOutput : Piece::Kind::kStatement, std::move(body), line});
    after_tag();
    text_line = line_at(pos);
  }
  flush_text();
  return out;
}

namespace {

// A string literal's escapes, as jinja2 decodes them (Python's unicode-escape); an escape
// Python does not know keeps its backslash.
size_t read_string(std::string_view s, size_t i, std::string& out, int line) {
  const char q = s[i++];
  while (i < s.size() && s[i] != q) {
    char c = s[i++];
    if (c != '\\' || i >= s.size()) {
      out += c;
      continue;
    }
    c = s[i++];
    switch (c) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'v': out += '\v'; break;
      case 'a': out += '\a'; break;
      case '0': out += '\0'; break;
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case '\n': break;
      case 'x': case 'u': case 'U': {
        const size_t n = c == 'x' ? 2 : c == 'u' ? 4 : 8;
        if (i + n > s.size()) throw Error(format("line %d: a truncated \\%c escape in a string", line, c));
        const uint32_t cp = static_cast<uint32_t>(std::stoul(std::string(s.substr(i, n)), nullptr, 16));
        append_utf8(out, cp);
        i += n;
        break;
      }
      default: out += '\\'; out += c;
    }
  }
  if (i >= s.size()) throw Error(format("line %d: a string is never closed", line));
  return i + 1;
}

}  // namespace

std::vector<Token> tokenize_expression(std::string_view s, int line) {
  static constexpr std::string_view kOps2[] = {"**", "//", "==", "!=", "<=", ">="};
  std::vector<Token> out;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (is_space(c)) {
      line += c == '\n';
      ++i;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      out.push_back({Token::Kind::kName, std::string(s.substr(i, j - i)), line});
      i = j;
    } else if (c == '0' && i + 2 < s.size() && std::string_view("xXoObB").find(s[i + 1]) != std::string_view::npos) {
      // 0x1F, 0o17, 0b101
      const int base = (s[i + 1] | 0x20) == 'x' ? 16 : (s[i + 1] | 0x20) == 'o' ? 8 : 2;
      size_t j = i + 2;
      std::string digits;
      for (; j < s.size() && (std::isxdigit(static_cast<unsigned char>(s[j])) || s[j] == '_'); ++j)
        if (s[j] != '_') digits += s[j];
      if (digits.empty()) throw Error(format("line %d: a number with no digits", line));
      size_t used = 0;
      long long v = 0;
      try {
        v = std::stoll(digits, &used, base);
      } catch (const std::exception&) {
        throw Error(format("line %d: the number '%s' does not fit in 64 bits", line, digits.c_str()));
      }
      if (used != digits.size()) throw Error(format("line %d: '%s' is not a base-%d number", line, digits.c_str(), base));
      out.push_back({Token::Kind::kInteger, std::to_string(v), line});
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      bool is_float = false;
      while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      if (j + 1 < s.size() && s[j] == '.' && std::isdigit(static_cast<unsigned char>(s[j + 1]))) {
        is_float = true;
        for (++j; j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])); ++j) {}
      }
      if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
        size_t k = j + 1;
        if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
        if (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) {
          is_float = true;
          for (j = k; j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])); ++j) {}
        }
      }
      std::string digits;
      for (size_t k = i; k < j; ++k)
        if (s[k] != '_') digits += s[k];
      out.push_back({is_float ? Token::Kind::kFloat : Token::Kind::kInteger, digits, line});
      i = j;
    } else if (c == '\'' || c == '"') {
      std::string value;
      const int at = line;
      const size_t j = read_string(s, i, value, line);
      for (size_t k = i; k < j; ++k) line += s[k] == '\n';
      out.push_back({Token::Kind::kString, std::move(value), at});
      i = j;
    } else {
      std::string op;
      for (std::string_view o : kOps2)
        if (s.substr(i, 2) == o) op = o;
      if (op.empty()) {
        if (std::string_view("+-*/%~<>=()[]{}.,:|!").find(c) == std::string_view::npos)
          throw Error(format("line %d: unexpected character '%c' in a tag", line, c));
        op = std::string(1, c);
      }
      out.push_back({Token::Kind::kOperator, op, line});
      i += op.size();
    }
  }
  out.push_back({Token::Kind::kEnd, "", line});
  return out;
}

}  // namespace pagedchat::jinja
