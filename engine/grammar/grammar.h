#pragma once
// A context-free grammar over Unicode code points, the form structured output is enforced in
// (a JSON schema, `response_format: json_object` and llama.cpp's GBNF all become one). Each
// rule is its alternatives, each a sequence of elements, one after another in one vector:
//
//   rule   := alternative (kAlt alternative)* kEnd
//   char   := kChar c (kCharRangeUpper hi)? (kCharAlt c (kCharRangeUpper hi)?)*   a class
//           | kCharNot c ...                                                      its complement
//           | kCharAny                                                            any code point
//
// Repetitions (*, +, ?, {m,n}) are already rules of their own here (gbnf.h writes them so),
// so a grammar is only sequences, alternatives and references.

#include <cstdint>
#include <string>
#include <vector>

namespace pagedchat::grammar {

enum class ElementKind : uint8_t {
  kEnd,             // the rule's last alternative ends
  kAlt,             // the next alternative begins
  kRuleRef,         // value: the rule's index
  kChar,            // value: a code point (or a range's low end, with kCharRangeUpper next)
  kCharNot,         // the same, negated: any code point but the class
  kCharRangeUpper,  // value: the high end (inclusive) of the range begun just before
  kCharAlt,         // value: another code point (or range start) of the same class
  kCharAny,         // any code point
};

struct Element {
  ElementKind kind = ElementKind::kEnd;
  uint32_t value = 0;
  bool operator==(const Element&) const = default;
};

struct Grammar {
  std::vector<std::vector<Element>> rules;  // each ends with kEnd
  std::vector<std::string> names;           // rules[i]'s name ("root", "value", "root_3" for a generated one)
  uint32_t root = 0;

  // Whether element `e` starts a character class (kChar, kCharNot, kCharAny).
  static bool starts_char(const Element& e) {
    return e.kind == ElementKind::kChar || e.kind == ElementKind::kCharNot || e.kind == ElementKind::kCharAny;
  }
};

// Whether the class beginning at `cls` (a starts_char element) admits code point `c`; `end`
// is set past the class's last element.
bool class_matches(const Element* cls, uint32_t c, const Element** end = nullptr);

}  // namespace pagedchat::grammar
