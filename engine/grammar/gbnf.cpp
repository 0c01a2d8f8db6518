// Reading GBNF (see gbnf.h): a recursive-descent parser over the text's bytes, UTF-8 decoded
// where a literal or a class holds characters.
#include "engine/grammar/gbnf.h"

#include <functional>
#include <map>
#include <string>

#include "engine/common/error.h"

namespace pagedchat::grammar {
namespace {

using K = ElementKind;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Grammar parse(std::string_view root_name) {
    skip_space(true);
    while (pos_ < text_.size()) {
      parse_rule();
      skip_space(true);
    }
    for (const auto& [name, id] : ids_)
      if (g_.rules[id].empty()) fail_at(first_use_.at(name), "the rule '%s' is used but never defined", name.c_str());
    const auto root = ids_.find(std::string(root_name));
    if (root == ids_.end() || g_.rules[root->second].empty()) fail("GBNF: no rule '%.*s' (the grammar's start)", int(root_name.size()), root_name.data());
    g_.root = root->second;
    return std::move(g_);
  }

 private:
  template <typename... Args>
  [[noreturn]] void fail_at(size_t at, const char* fmt, Args... args) {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') ++line, column = 1;
      else ++column;
    }
    fail("GBNF line %zu, column %zu: %s", line, column, format(fmt, args...).c_str());
  }

  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
  bool at_end() const { return pos_ >= text_.size(); }

  // Spaces and comments; newlines only where allowed (inside parentheses, between rules).
  void skip_space(bool newlines) {
    while (!at_end()) {
      const char c = peek();
      if (c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r'))) {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  uint32_t rule_id(const std::string& name, size_t used_at) {
    const auto [it, added] = ids_.emplace(name, static_cast<uint32_t>(g_.rules.size()));
    if (added) {
      g_.rules.emplace_back();
      g_.names.push_back(name);
      first_use_[name] = used_at;
    }
    return it->second;
  }

  uint32_t new_rule(const std::string& base) {
    std::string name;
    do name = base + "_" + std::to_string(++generated_); while (ids_.count(name));
    return rule_id(name, pos_);
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (!at_end() && is_name_char(peek())) ++pos_;
    if (pos_ == start) fail_at(pos_, "expected a rule name");
    return std::string(text_.substr(start, pos_ - start));
  }

  void parse_rule() {
    const size_t at = pos_;
    const std::string name = parse_name();
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=") fail_at(pos_, "expected '::=' after '%s'", name.c_str());
    pos_ += 3;
    skip_space(false);
    const uint32_t id = rule_id(name, at);
    if (!g_.rules[id].empty()) fail_at(at, "the rule '%s' is defined twice", name.c_str());
    std::vector<Element> body = parse_alternatives(name, false);
    g_.rules[id] = std::move(body);
    if (!at_end() && peek() != '\n' && peek() != '\r') fail_at(pos_, "expected the end of the line");
  }

  std::vector<Element> parse_alternatives(const std::string& rule, bool nested) {
    std::vector<Element> out;
    parse_sequence(rule, nested, out);
    while (peek() == '|') {
      ++pos_;
      skip_space(true);
      out.push_back({K::kAlt, 0});
      parse_sequence(rule, nested, out);
    }
    out.push_back({K::kEnd, 0});
    return out;
  }

  // One alternative: items, each maybe repeated, appended to `out`.
  void parse_sequence(const std::string& rule, bool nested, std::vector<Element>& out) {
    size_t item_start = out.size();  // where the last item began, for a repetition after it
    bool has_item = false;
    while (!at_end()) {
      const char c = peek();
      if (c == '"') {
        item_start = out.size();
        parse_literal(out);
      } else if (c == '[') {
        item_start = out.size();
        parse_class(out);
      } else if (c == '.') {
        item_start = out.size();
        ++pos_;
        out.push_back({K::kCharAny, 0});
      } else if (c == '(') {
        item_start = out.size();
        ++pos_;
        skip_space(true);
        const uint32_t group = new_rule(rule);
        g_.rules[group] = parse_alternatives(rule, true);
        if (peek() != ')') fail_at(pos_, "expected ')'");
        ++pos_;
        out.push_back({K::kRuleRef, group});
      } else if (is_name_char(c)) {
        item_start = out.size();
        const size_t at = pos_;
        const std::string name = parse_name();
        skip_space(nested);
        if (text_.substr(pos_, 3) == "::=") fail_at(at, "expected the end of the line before the rule '%s'", name.c_str());
        out.push_back({K::kRuleRef, rule_id(name, at)});
        has_item = true;
        continue;  // spaces skipped already
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (!has_item) fail_at(pos_, "'%c' repeats nothing", c);
        parse_repetition(rule, out, item_start);
      } else {
        break;
      }
      has_item = true;
      skip_space(nested);
    }
  }

  void parse_repetition(const std::string& rule, std::vector<Element>& out, size_t item_start) {
    int min = 0, max = -1;
    const char c = peek();
    ++pos_;
    if (c == '+') min = 1;
    else if (c == '?') max = 1;
    else if (c == '{') {
      skip_space(false);
      min = parse_count();
      skip_space(false);
      max = min;
      if (peek() == ',') {
        ++pos_;
        skip_space(false);
        max = peek() == '}' ? -1 : parse_count();
        skip_space(false);
      }
      if (peek() != '}') fail_at(pos_, "expected '}'");
      ++pos_;
      if (max >= 0 && max < min) fail_at(pos_, "{%d,%d}: the most is fewer than the least", min, max);
    }
    const std::vector<Element> item(out.begin() + static_cast<std::ptrdiff_t>(item_start), out.end());
    out.resize(item_start);
    for (int i = 0; i < min; ++i) out.insert(out.end(), item.begin(), item.end());
    if (max < 0) {
      // r ::= item r |
      const uint32_t r = new_rule(rule);
      std::vector<Element> body = item;
      body.push_back({K::kRuleRef, r});
      body.push_back({K::kAlt, 0});
      body.push_back({K::kEnd, 0});
      g_.rules[r] = std::move(body);
      out.push_back({K::kRuleRef, r});
    } else if (max > min) {
      // r1 ::= item |   r2 ::= item r1 |   ...: up to max - min more
      uint32_t last = 0;
      for (int i = 0; i < max - min; ++i) {
        const uint32_t r = new_rule(rule);
        std::vector<Element> body = item;
        if (i > 0) body.push_back({K::kRuleRef, last});
        body.push_back({K::kAlt, 0});
        body.push_back({K::kEnd, 0});
        g_.rules[r] = std::move(body);
        last = r;
      }
      out.push_back({K::kRuleRef, last});
    }
  }

  int parse_count() {
    const size_t start = pos_;
    long long n = 0;
    while (peek() >= '0' && peek() <= '9') {
      n = n * 10 + (peek() - '0');
      if (n > kMaxRepetition) fail_at(start, "a repetition count past %d", kMaxRepetition);
      ++pos_;
    }
    if (pos_ == start) fail_at(pos_, "expected a number");
    return static_cast<int>(n);
  }

  // One character of a literal or a class: an escape or a UTF-8 sequence.
  uint32_t parse_char() {
    if (at_end()) fail_at(pos_, "unexpected end of the grammar");
    const unsigned char c = static_cast<unsigned char>(peek());
    if (c == '\\') {
      ++pos_;
      const char e = peek();
      ++pos_;
      switch (e) {
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case '\\': case '"': case '[': case ']': case '-': case '/': case '^': return static_cast<uint32_t>(e);
        case 'x': return parse_hex(2);
        case 'u': return parse_hex(4);
        case 'U': return parse_hex(8);
        default: fail_at(pos_ - 1, "unknown escape '\\%c'", e);
      }
    }
    const int length = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (length == 0 || pos_ + static_cast<size_t>(length) > text_.size()) fail_at(pos_, "invalid UTF-8");
    uint32_t cp = length == 1 ? c : c & (0xff >> (length + 1));
    for (int i = 1; i < length; ++i) {
      const unsigned char next = static_cast<unsigned char>(text_[pos_ + static_cast<size_t>(i)]);
      if ((next & 0xc0) != 0x80) fail_at(pos_, "invalid UTF-8");
      cp = (cp << 6) | (next & 0x3f);
    }
    pos_ += static_cast<size_t>(length);
    return cp;
  }

  uint32_t parse_hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const char h = peek();
      const int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
      if (d < 0) fail_at(pos_, "expected %d hex digits", digits);
      v = v * 16 + static_cast<uint32_t>(d);
      ++pos_;
    }
    if (v > 0x10ffff) fail_at(pos_, "U+%X is past Unicode", v);
    return v;
  }

  void parse_literal(std::vector<Element>& out) {
    ++pos_;  // "
    while (peek() != '"') {
      if (at_end() || peek() == '\n') fail_at(pos_, "a string literal is not closed");
      out.push_back({K::kChar, parse_char()});
    }
    ++pos_;
  }

  void parse_class(std::vector<Element>& out) {
    ++pos_;  // [
    K kind = K::kChar;
    if (peek() == '^') {
      ++pos_;
      kind = K::kCharNot;
    }
    bool first = true;
    while (peek() != ']') {
      if (at_end() || peek() == '\n') fail_at(pos_, "a character class is not closed");
      const uint32_t low = parse_char();
      out.push_back({first ? kind : K::kCharAlt, low});
      first = false;
      if (peek() == '-' && peek(1) != ']') {
        ++pos_;
        const uint32_t high = parse_char();
        if (high < low) fail_at(pos_, "a range that ends before it starts");
        out.push_back({K::kCharRangeUpper, high});
      }
    }
    if (first) fail_at(pos_, "an empty character class");
    ++pos_;
  }

  std::string_view text_;
  size_t pos_ = 0;
  Grammar g_;
  std::map<std::string, uint32_t> ids_;
  std::map<std::string, size_t> first_use_;
  int generated_ = 0;
};

// Which rules can match the empty string (a fixpoint over the alternatives).
std::vector<bool> nullable_rules(const Grammar& g) {
  std::vector<bool> nullable(g.rules.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < g.rules.size(); ++r) {
      if (nullable[r]) continue;
      bool alt_empty = true;  // the alternative read so far can be empty
      for (const Element& e : g.rules[r]) {
        if (e.kind == K::kAlt || e.kind == K::kEnd) {
          if (alt_empty) {
            nullable[r] = changed = true;
            break;
          }
          alt_empty = true;
        } else if (e.kind == K::kRuleRef) {
          alt_empty = alt_empty && nullable[e.value];
        } else if (Grammar::starts_char(e)) {
          alt_empty = false;
        }
      }
    }
  }
  return nullable;
}

// Refused: a rule that reaches itself at the left edge of an alternative.
void check_left_recursion(const Grammar& g) {
  const std::vector<bool> nullable = nullable_rules(g);
  std::vector<std::vector<uint32_t>> left(g.rules.size());  // rules referenced before any character
  for (size_t r = 0; r < g.rules.size(); ++r) {
    bool edge = true;
    for (const Element& e : g.rules[r]) {
      if (e.kind == K::kAlt || e.kind == K::kEnd) edge = true;
      else if (!edge) continue;
      else if (e.kind == K::kRuleRef) {
        left[r].push_back(e.value);
        edge = nullable[e.value];
      } else if (Grammar::starts_char(e)) {
        edge = false;
      }
    }
  }
  std::vector<int> state(g.rules.size(), 0);  // 0 new, 1 on the path, 2 done
  std::vector<uint32_t> path;
  std::function<void(uint32_t)> visit = [&](uint32_t r) {
    state[r] = 1;
    path.push_back(r);
    for (uint32_t next : left[r]) {
      if (state[next] == 1) {
        std::string cycle;
        for (size_t i = 0; i < path.size(); ++i)
          if (path[i] == next || !cycle.empty()) cycle += g.names[path[i]] + " -> ";
        fail("GBNF: the rule '%s' is left-recursive (%s%s): write it with a repetition instead", g.names[next].c_str(),
             cycle.c_str(), g.names[next].c_str());
      }
      if (state[next] == 0) visit(next);
    }
    path.pop_back();
    state[r] = 2;
  };
  for (uint32_t r = 0; r < g.rules.size(); ++r)
    if (state[r] == 0) visit(r);
}

void write_char(std::string& out, uint32_t c, bool in_class) {
  if (c == '"' || c == '\\' || (in_class && (c == ']' || c == '-' || c == '^'))) {
    out += '\\';
    out += static_cast<char>(c);
  } else if (c < 0x20 || c == 0x7f) {
    out += format("\\x%02X", c);
  } else if (c < 0x80) {
    out += static_cast<char>(c);
  } else {
    out += format(c > 0xffff ? "\\U%08X" : "\\u%04X", c);
  }
}

}  // namespace

bool class_matches(const Element* cls, uint32_t c, const Element** end) {
  if (cls->kind == K::kCharAny) {
    if (end) *end = cls + 1;
    return true;
  }
  const bool negated = cls->kind == K::kCharNot;
  bool found = false;
  const Element* e = cls;
  do {
    const uint32_t low = e->value;
    const uint32_t high = e[1].kind == K::kCharRangeUpper ? e[1].value : low;
    found = found || (c >= low && c <= high);
    e += e[1].kind == K::kCharRangeUpper ? 2 : 1;
  } while (e->kind == K::kCharAlt);
  if (end) *end = e;
  return found != negated;
}

// References to rules with one body go to the first of them (a schema writes the same string
// rule for each of its string members): the masker's caches (token_masker.h) key on grammar
// positions, so positions that are the same rule share their masks. Until nothing changes, as
// rules that differed only in what they referred to become the same. The rules left
// unreferenced stay, so names and indices do not move.
void merge_identical_rules(Grammar& g) {
  for (bool changed = true; changed;) {
    changed = false;
    std::map<std::vector<uint64_t>, uint32_t> first;
    std::vector<uint32_t> to(g.rules.size());
    for (size_t r = 0; r < g.rules.size(); ++r) {
      std::vector<uint64_t> body;
      for (const Element& e : g.rules[r]) body.push_back(uint64_t{static_cast<uint8_t>(e.kind)} << 32 | e.value);
      to[r] = first.emplace(std::move(body), static_cast<uint32_t>(r)).first->second;
    }
    for (std::vector<Element>& rule : g.rules)
      for (Element& e : rule)
        if (e.kind == K::kRuleRef && to[e.value] != e.value) {
          e.value = to[e.value];
          changed = true;
        }
  }
}

Grammar parse_gbnf(std::string_view text, std::string_view root) {
  Grammar g = Parser(text).parse(root);
  check_left_recursion(g);
  merge_identical_rules(g);
  return g;
}

std::string to_gbnf(const Grammar& g) {
  std::string out;
  for (size_t r = 0; r < g.rules.size(); ++r) {
    out += g.names[r] + " ::=";
    // An empty alternative is written "" (a line may not end in '|': what follows it is read
    // as the alternative, as llama.cpp reads it).
    for (const Element* e = g.rules[r].data();;) {
      const bool alternative_ends = e->kind == K::kAlt || e->kind == K::kEnd;
      if (alternative_ends && (e == g.rules[r].data() || e[-1].kind == K::kAlt)) out += " \"\"";
      if (e->kind == K::kEnd) break;
      if (e->kind == K::kAlt) {
        out += " |";
        ++e;
      } else if (e->kind == K::kRuleRef) {
        out += " " + g.names[e->value];
        ++e;
      } else if (e->kind == K::kCharAny) {
        out += " .";
        ++e;
      } else {
        out += e->kind == K::kCharNot ? " [^" : " [";
        const Element* end = nullptr;
        class_matches(e, 0, &end);
        for (const Element* c = e; c < end; ++c) {
          if (c->kind == K::kCharRangeUpper) out += '-';
          write_char(out, c->value, true);
        }
        out += "]";
        e = end;
      }
    }
    out += "\n";
  }
  return out;
}

}  // namespace pagedchat::grammar
