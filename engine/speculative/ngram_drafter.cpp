// Prompt lookup over the sequence's own tokens (see ngram_drafter.h).
#include "engine/speculative/ngram_drafter.h"

#include <algorithm>

namespace pagedchat {

NgramDrafter::NgramDrafter(int32_t min_ngram, int32_t max_ngram)
    : min_ngram_(std::max(min_ngram, 1)), max_ngram_(std::max(max_ngram, std::max(min_ngram, 1))) {}

void NgramDrafter::propose(std::span<DraftJob> jobs) {
  for (DraftJob& job : jobs) job.draft = lookup(job.tokens, job.max_tokens);
}

// The latest match wins: while a reply copies a span, the latest occurrence of its last tokens is
// usually the span being copied, and its continuation the text that comes next. A longer n is
// tried first: a longer match is more likely to go on as the context did.
std::vector<int32_t> NgramDrafter::lookup(std::span<const int32_t> tokens, int32_t max_tokens) const {
  const auto len = static_cast<int32_t>(tokens.size());
  if (max_tokens <= 0) return {};
  for (int32_t n = std::min(max_ngram_, len - 1); n >= min_ngram_; --n) {
    std::span<const int32_t> suffix = tokens.subspan(static_cast<size_t>(len - n));
    // A match at [i, i + n) with i + n < len, latest first; its continuation starts at i + n.
    for (int32_t i = len - n - 1; i >= 0; --i) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + i)) continue;
      const int32_t from = i + n;
      const int32_t count = std::min(max_tokens, len - from);
      return {tokens.begin() + from, tokens.begin() + from + count};
    }
  }
  return {};
}

}  // namespace pagedchat
