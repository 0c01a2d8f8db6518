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
  // Throws Error if a logit is NaN or infinite (corrupt weights), before any choice.
  int32_t sample(std::span<const float> logits, std::span<const int32_t> history);

  // The distribution sample() draws from, without drawing: after the penalties and the
  // filters; greedy gives its argmax with probability 1. Speculative decoding checks drafted
  // tokens against it. Throws as sample() does.
  void distribution(std::span<const float> logits, std::span<const int32_t> history, TokenProbs& out);

  // The uniform draw in [0, 1) from splitmix64: portable, unlike std:: distributions.
  double next_uniform();

  const SamplingParams& params() const { return params_; }

 private:
  void penalize(std::span<const float> logits, std::span<const int32_t> history);
  size_t candidates();  // ids_ and probs_ (normalized) of the filtered tokens; returns how many count

  SamplingParams params_;
  uint64_t rng_state_;
  std::vector<float> work_;
  std::vector<int32_t> ids_;
  std::vector<double> probs_;
};

}  // namespace pagedchat
