// The tokens a grammar allows next, each tried on the matcher (see token_mask.h).
#include "engine/grammar/token_mask.h"

#include <bit>

#include "engine/tokenizer/tokenizer.h"

namespace pagedchat::grammar {

VocabularyBytes::VocabularyBytes(const Tokenizer& tokenizer) {
  const size_t n = static_cast<size_t>(tokenizer.num_vocab());
  bytes_.resize(n);
  ends_.resize(n);
  control_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const int32_t id = static_cast<int32_t>(i);
    control_[i] = tokenizer.is_control(id);
    ends_[i] = tokenizer.is_eog(id) || tokenizer.eos_id() == id;
    if (!control_[i]) bytes_[i] = tokenizer.token_to_piece(id, false);
  }
}

int TokenMask::count() const {
  int n = 0;
  for (const uint64_t w : words) n += std::popcount(w);
  return n;
}

TokenMask allowed_tokens(const GrammarMatcher& matcher, const VocabularyBytes& vocabulary) {
  TokenMask mask;
  mask.words.assign((vocabulary.size() + 63) / 64, 0);
  const bool can_end = matcher.can_end();
  for (size_t i = 0; i < vocabulary.size(); ++i) {
    const int32_t id = static_cast<int32_t>(i);
    bool allowed = false;
    if (vocabulary.ends_generation(id)) allowed = can_end;
    else if (!vocabulary.is_control(id) && !vocabulary.bytes(id).empty()) allowed = matcher.allows(vocabulary.bytes(id));
    if (allowed) mask.words[i / 64] |= uint64_t{1} << (i % 64);
  }
  return mask;
}

}  // namespace pagedchat::grammar
