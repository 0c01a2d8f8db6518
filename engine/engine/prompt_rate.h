#pragma once
// How fast this engine computes prompts, measured on its own steps: FLOP/s as StepCostModel
// counts them, over forward passes that computed enough prompt tokens to be bound by arithmetic
// (a decode step, bound by reading the weights, says nothing of a prompt's speed). With the model's
// shapes it gives about how long any stretch of a prompt takes to compute, attention over the
// positions before it included: what a restore from the disk tier saved.

#include <cstdint>

namespace pagedchat {

class PromptRate {
 public:
  // Prompt tokens a forward pass computes at least to count: a 512-token chunk is well within
  // the compute-bound side, a few tokens of a new question beside decodes are not.
  static constexpr int32_t kMinPromptTokens = 64;

  // A forward pass: the prompt tokens it computed (not decodes), its counted FLOP, its wall time.
  // Whether it counted.
  bool observe(int32_t prompt_tokens, double flops, double seconds) {
    if (prompt_tokens < kMinPromptTokens || !(seconds > 0) || !(flops > 0)) return false;
    const double sample = flops / seconds;
    // A running mean that follows the machine (threads, clocks, other load) over a few chunks.
    // A seeded rate counts as earlier samples: an engine's first pass, slowed by weights still
    // paging in from the file, moves a good saved rate by a quarter, not all the way.
    rate_ = rate_ > 0 ? 0.75 * rate_ + 0.25 * sample : sample;
    ++num_samples_;
    return true;
  }
  // A rate measured before (by an earlier run, saved with the disk tier), until this one measures.
  void seed(double flops_per_second) {
    if (num_samples_ == 0 && flops_per_second > 0) rate_ = flops_per_second;
  }
  double flops_per_second() const { return rate_; }  // 0: not known
  int64_t num_samples() const { return num_samples_; }

 private:
  double rate_ = 0;
  int64_t num_samples_ = 0;
};

}  // namespace pagedchat
