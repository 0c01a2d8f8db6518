#pragma once
// Where a text stands in a grammar: every way the text read so far can go on, as stacks of
// positions in the rules (grammar_stacks.h). Text is fed as UTF-8 bytes, a token's at a
// time: a token may end inside a character, whose bytes wait for the next one. What a token
// would do is asked on a copy (allows), so the sampler can mask the tokens a grammar forbids.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/grammar/grammar.h"
#include "engine/grammar/grammar_stacks.h"

namespace pagedchat::grammar {

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar);

  // Reads the bytes; false when the grammar forbids them (or they are not UTF-8), and then
  // the matcher is as it was.
  bool accept(std::string_view utf8);
  // Whether accept(utf8) would succeed; nothing changes.
  bool allows(std::string_view utf8) const;
  // The text read so far is a whole sentence of the grammar (an end-of-text token may come).
  bool can_end() const;
  // The text the grammar forces next, up to where it allows a choice (or the end), at most
  // max_bytes: "ame\"" after `{"n` when "name" is the only member beginning so. Jump-forward
  // appends it without sampling it token by token.
  std::string forced_text(size_t max_bytes = 256) const;
  // Nothing at all can follow: the text is whole and no character may come.
  bool finished() const { return can_end() && stacks_.size() == 1; }
  size_t num_stacks() const { return stacks_.size(); }
  const Grammar& grammar() const { return *grammar_; }

 private:
  friend class TokenMasker;  // reads the stacks (its cache's keys) and steps copies of them
  bool run(std::vector<Stack>& stacks, std::string& pending, std::string_view utf8) const;

  std::shared_ptr<const Grammar> grammar_;
  std::vector<Stack> stacks_;
  std::string pending_;  // the bytes of a character begun, not whole yet
};

}  // namespace pagedchat::grammar
