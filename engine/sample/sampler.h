#pragma once
// Picks the next token from a row of logits: penalties, then greedy or temperature with
// top-k / top-p / min-p filtering, drawn from the sequence's own seeded generator so a
// request's output depends only on its seed, never on what else runs.

#include <cstdint>
#include <span>
#include <vector>

#include "engine/sample/sampling_params.h"

namespace pagedchat {

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);

  // history: the sequence's tokens so far (prompt and generated), for the penalties.
  // Throws Error if a logit is NaN or infinite (corrupt weights), before any choice.
  int32_t sample(std::span<const float> logits, std::span<const int32_t> history);

  // The uniform draw in [0, 1) from splitmix64: portable, unlike std:: distributions.
  double next_uniform();

 private:
  SamplingParams params_;
  uint64_t rng_state_;
  std::vector<float> work_;
  std::vector<int32_t> ids_;
  std::vector<double> probs_;
};

}  // namespace pagedchat
