#pragma once
// Which tokens of a vocabulary a grammar allows next, for the sampler to mask the others: a
// token is allowed when its bytes (what it adds to the text) keep the text a prefix of a
// sentence of the grammar; an end-of-generation token when the text is a whole sentence.
// Control tokens and tokens that add no bytes are never allowed otherwise (they would let a
// model stall inside a constrained document).
//
// This is the direct way, every token tried on the matcher: correct, and the reference the
// faster ways (a vocabulary trie, masks precomputed per grammar position) will be held to.

#include <cstdint>
#include <string>
#include <vector>

#include "engine/grammar/grammar_matcher.h"

namespace pagedchat {
class Tokenizer;
}

namespace pagedchat::grammar {

// The bytes each token adds to the text, taken once from the tokenizer.
class VocabularyBytes {
 public:
  explicit VocabularyBytes(const Tokenizer& tokenizer);
  size_t size() const { return bytes_.size(); }
  const std::string& bytes(int32_t id) const { return bytes_[static_cast<size_t>(id)]; }
  bool ends_generation(int32_t id) const { return ends_[static_cast<size_t>(id)]; }
  bool is_control(int32_t id) const { return control_[static_cast<size_t>(id)]; }

 private:
  std::vector<std::string> bytes_;
  std::vector<bool> ends_, control_;
};

// One bit per token: allowed or not.
struct TokenMask {
  std::vector<uint64_t> words;
  bool allows(int32_t id) const { return (words[static_cast<size_t>(id) / 64] >> (static_cast<size_t>(id) % 64)) & 1; }
  int count() const;
};

TokenMask allowed_tokens(const GrammarMatcher& matcher, const VocabularyBytes& vocabulary);

}  // namespace pagedchat::grammar
