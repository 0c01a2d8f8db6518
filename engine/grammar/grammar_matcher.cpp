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

}  // namespace pagedchat::grammar
