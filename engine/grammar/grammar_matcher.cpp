// A grammar's stacks advanced over a reply's bytes (see grammar_matcher.h).
#include "engine/grammar/grammar_matcher.h"

#include <algorithm>

namespace pagedchat::grammar {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar)
    : grammar_(std::move(grammar)), stacks_(initial_stacks(*grammar_)) {}

bool GrammarMatcher::run(std::vector<Stack>& stacks, std::string& pending, std::string_view utf8) const {
  for (const char byte : utf8)
    if (!advance_byte(*grammar_, stacks, pending, static_cast<unsigned char>(byte))) return false;
  return true;
}

bool GrammarMatcher::accept(std::string_view utf8) {
  std::vector<Stack> stacks = stacks_;
  std::string pending = pending_;
  if (!run(stacks, pending, utf8)) return false;
  stacks_ = std::move(stacks);
  pending_ = std::move(pending);
  return true;
}

bool GrammarMatcher::allows(std::string_view utf8) const {
  std::vector<Stack> stacks = stacks_;
  std::string pending = pending_;
  return run(stacks, pending, utf8);
}

bool GrammarMatcher::can_end() const { return pending_.empty() && may_end(stacks_); }

std::string GrammarMatcher::forced_text(size_t max_bytes) const {
  std::string out;
  if (!pending_.empty()) return out;
  std::vector<Stack> stacks = stacks_;
  std::string pending;
  while (out.size() < max_bytes && stacks.size() == 1 && !stacks[0].empty()) {
    const Element* top = stacks[0].back();
    // One way on, and it is one character: a class of a single code point.
    if (top->kind != ElementKind::kChar || top[1].kind == ElementKind::kCharRangeUpper || top[1].kind == ElementKind::kCharAlt) break;
    const uint32_t c = top->value;
    std::string bytes;
    if (c < 0x80) bytes += static_cast<char>(c);
    else if (c < 0x800) bytes += {static_cast<char>(0xc0 | (c >> 6)), static_cast<char>(0x80 | (c & 0x3f))};
    else if (c < 0x10000) bytes += {static_cast<char>(0xe0 | (c >> 12)), static_cast<char>(0x80 | ((c >> 6) & 0x3f)), static_cast<char>(0x80 | (c & 0x3f))};
    else bytes += {static_cast<char>(0xf0 | (c >> 18)), static_cast<char>(0x80 | ((c >> 12) & 0x3f)), static_cast<char>(0x80 | ((c >> 6) & 0x3f)),
                   static_cast<char>(0x80 | (c & 0x3f))};
    if (!run(stacks, pending, bytes)) break;
    out += bytes;
  }
  return out;
}

}  // namespace pagedchat::grammar
