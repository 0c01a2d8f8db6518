#pragma once
// The tokens a grammar allows next, fast enough to mask every sampled position of a batch
// (allowed_tokens in token_mask.h is the slow, direct way, and this class's reference).
//
// Two caches per grammar, after XGrammar's split of the vocabulary into tokens whose fate the
// grammar decides at the current position alone and the few the context decides:
// - by the whole state (the matcher's stacks and partial character): the mask itself. A reply
//   returns to the same states again and again (inside a string, between members).
// - by the state's stacks cut to their top kLocalDepth positions: which tokens those positions
//   accept, which they reject, and which leave them (a token that closes the innermost rules
//   and goes on into what lies below the cut, e.g. `",` at the end of a string value). Found by
//   one walk over the vocabulary sorted by bytes (a trie walked in order: tokens sharing a
//   prefix are stepped over it once, and a prefix the grammar refuses drops every token under
//   it). The same tops recur under many contexts (every string value of a schema has the same
//   three), so the walk is done once for all of them; only the tokens that leave are then
//   tried on the whole matcher.
// Used from one thread (the engine's). A grammar's caches go with it (held by weak_ptr).

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/grammar/grammar_matcher.h"
#include "engine/grammar/token_mask.h"

namespace pagedchat::grammar {

class TokenMasker {
 public:
  // How many positions of each stack the context-independent walk looks at.
  static constexpr size_t kLocalDepth = 4;
  // A grammar's state cache is emptied past this many masks (each is vocabulary / 8 bytes).
  static constexpr size_t kMaxStates = 4096;

  explicit TokenMasker(VocabularyBytes vocabulary);

  // The tokens `matcher` allows next: allowed_tokens(matcher, vocabulary()) exactly. The
  // reference is good until the next call.
  const TokenMask& allowed(const GrammarMatcher& matcher);

  const VocabularyBytes& vocabulary() const { return vocabulary_; }

  struct Counts {
    int64_t state_hits = 0;      // masks answered from the state cache
    int64_t state_misses = 0;
    int64_t local_walks = 0;     // vocabulary walks (local cache misses)
    int64_t leaving_checked = 0; // tokens that left the local part, tried on the whole matcher
  };
  const Counts& counts() const { return counts_; }

 private:
  struct Local {
    TokenMask accepted;
    std::vector<int32_t> leaving;  // decided by what lies below the cut
  };
  struct PerGrammar {
    std::weak_ptr<const Grammar> grammar;
    std::unordered_map<std::string, TokenMask> states;
    std::unordered_map<std::string, Local> locals;
  };

  PerGrammar& caches_of(const GrammarMatcher& matcher);
  Local walk_vocabulary(const Grammar& g, std::vector<Stack> stacks, const std::string& pending) const;
  void walk(const Grammar& g, size_t lo, size_t hi, size_t depth, const std::vector<Stack>& stacks,
            const std::string& pending, bool left, Local& out) const;

  VocabularyBytes vocabulary_;
  std::vector<int32_t> sorted_;     // the tokens that add bytes (not control, not end of generation), by bytes
  std::vector<int32_t> end_tokens_; // end-of-generation tokens
  std::unordered_map<const Grammar*, PerGrammar> grammars_;
  Counts counts_;
};

}  // namespace pagedchat::grammar
