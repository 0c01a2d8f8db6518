#pragma once
// Picks the next token from a row of logits: penalties, then greedy or temperature with
// top-k / top-p / min-p filtering, drawn from the sequence's own seeded generator so a
// request's output depends only on its seed, never on what else runs.

#include <cstdint>
#include <span>
#include <vector>

#include "engine/sample/sampling_params.h"

namespace pagedchat {

// A distribution over a few tokens (the others have probability 0): ids with their
// probabilities, which sum to 1.
struct TokenProbs {
  std::vector<int32_t> ids;
  std::vector<double> probs;

  double prob_of(int32_t id) const;
  // The token at u along the cumulative probabilities (0 <= u < their sum; the last past it).
  int32_t draw(double u) const;
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);

  // history: the sequence's tokens so far (prompt and generated), for the penalties.
  // allowed: null, or one bit per token (bit i of word i / 64): the tokens a grammar allows
  // (engine/grammar/token_masker.h); the others get no probability, after the penalties and
  // before every filter, so top-k, top-p and min-p choose among the allowed. At least one bit
  // must be set.
  // Throws Error if a logit is NaN or infinite (corrupt weights), before any choice.
  int32_t sample(std::span<const float> logits, std::span<const int32_t> history, const uint64_t* allowed = nullptr);

  // The distribution sample() draws from, without drawing: after the penalties and the
  // filters; greedy gives its argmax with probability 1. Speculative decoding checks drafted
  // tokens against it. Throws as sample() does.
  void distribution(std::span<const float> logits, std::span<const int32_t> history, TokenProbs& out,
                    const uint64_t* allowed = nullptr);

  // The uniform draw in [0, 1) from splitmix64: portable, unlike std:: distributions.
  double next_uniform();

  const SamplingParams& params() const { return params_; }

 private:
  void penalize(std::span<const float> logits, std::span<const int32_t> history, const uint64_t* allowed);
  size_t candidates();  // ids_ and probs_ (normalized) of the filtered tokens; returns how many count

  SamplingParams params_;
  uint64_t rng_state_;
  std::vector<float> work_;
  std::vector<int32_t> ids_;
  std::vector<double> probs_;
};

}  // namespace pagedchat
