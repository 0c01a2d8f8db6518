#pragma once
// The tokens a grammar allows next, fast enough to mask every sampled position of a batch
// (allowed_tokens in token_mask.h is the slow, direct way, and this class's reference).
//
// A state is a set of stacks (grammar_stacks.h), each stepped on its own, so the tokens a
// state allows are the union of those each of its stacks allows: masks are made per stack and
// OR-ed. Three caches per grammar, after XGrammar's split of the vocabulary into tokens whose
// fate the current position alone decides and the few its context decides:
// - by the whole state: the mask itself. A reply returns to the same states again and again
//   (inside a string, between members), and one schema's requests meet the same ones.
// - by one stack (and the partial character): its mask.
// - by the stack cut to its top few positions (kLocalDepth): which tokens those positions
//   accept, and which leave them (a token that closes the innermost rules and goes on into what
//   lies below the cut, e.g. `",` at the end of a string value); the rest they refuse. Found by
//   one walk over the vocabulary's trie (tokens sharing a prefix are stepped over it once, and a
//   prefix the grammar refuses drops every token under it). The same tops recur under many
//   contexts (every string member of a schema has the same ones), so the costly walks of
//   permissive positions are done once for all of them; only the tokens that leave are then
//   tried on the whole stack.
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
  static constexpr size_t kLocalDepth = 3;
  // A grammar's state and stack caches are each emptied past this many masks (each is
  // vocabulary / 8 bytes).
  static constexpr size_t kMaxStates = 4096;

  explicit TokenMasker(VocabularyBytes vocabulary);

  // The tokens `matcher` allows next: allowed_tokens(matcher, vocabulary()) exactly. The
  // reference is good until the next call.
  const TokenMask& allowed(const GrammarMatcher& matcher);

  const VocabularyBytes& vocabulary() const { return vocabulary_; }

  struct Counts {
    int64_t state_hits = 0;      // masks answered from the state cache
    int64_t state_misses = 0;
    int64_t stack_misses = 0;    // stack masks made (stack cache misses)
    int64_t local_walks = 0;     // vocabulary walks (local cache misses)
    int64_t leaving_checked = 0; // tokens that left the local part, tried on the whole stack
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
    std::unordered_map<std::string, TokenMask> stacks;
    std::unordered_map<std::string, Local> locals;
  };

  // The vocabulary's trie, laid out over sorted_: a node is the tokens sorted_[lo, hi) that
  // share its first `depth` bytes; its children (one per next byte) are nodes_[first, first + n).
  struct Node {
    uint32_t lo = 0, hi = 0;  // its tokens; those of exactly `depth` bytes come first
    uint32_t ends = 0;        // sorted_[lo, ends) end here
    uint32_t first = 0, n = 0;
    unsigned char byte = 0;   // the byte that leads here from the parent
  };
  void build_trie();
  PerGrammar& caches_of(const GrammarMatcher& matcher);
  const TokenMask& stack_mask(PerGrammar& caches, const Grammar& g, const Stack& stack, const std::string& pending);
  Local walk_vocabulary(const Grammar& g, std::vector<Stack> stacks, const std::string& pending) const;
  void walk(const Grammar& g, const Node& node, const std::vector<Stack>& stacks, const std::string& pending, bool left,
            Local& out) const;

  VocabularyBytes vocabulary_;
  std::vector<Node> nodes_;         // nodes_[0]: the root
  std::vector<int32_t> sorted_;     // the tokens that add bytes (not control, not end of generation), by bytes
  std::vector<int32_t> end_tokens_; // end-of-generation tokens
  std::unordered_map<const Grammar*, PerGrammar> grammars_;
  Counts counts_;
};

}  // namespace pagedchat::grammar
