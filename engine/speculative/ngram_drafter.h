#pragma once
// Prompt lookup: the draft is what followed the latest earlier occurrence of the sequence's
// last n tokens (n from max_ngram down to min_ngram), in its prompt or its reply so far. No
// second model: it pays off where a reply repeats spans of its context (editing or quoting a
// given text or code, a summary that reuses its source's phrases).

#include <cstdint>

#include "engine/speculative/drafter.h"

namespace pagedchat {

class NgramDrafter final : public Drafter {
 public:
  explicit NgramDrafter(int32_t min_ngram = 2, int32_t max_ngram = 4);
  const char* name() const override { return "ngram"; }
  void propose(std::span<DraftJob> jobs) override;

  // The proposal for one sequence: at most max_tokens tokens.
  std::vector<int32_t> lookup(std::span<const int32_t> tokens, int32_t max_tokens) const;

 private:
  int32_t min_ngram_, max_ngram_;
};

}  // namespace pagedchat
