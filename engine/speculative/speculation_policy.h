#pragma once
// How many drafted tokens each decoding sequence gets this step. A drafted token is worth its
// chance of being kept; it costs a share of a step (one more token through every matrix, plus
// drafting it). At batch 1 on a CPU the weights' read dominates and an extra token costs about
// a quarter of a step, so drafts kept half the time pay; with many sequences decoding the step
// is already compute-bound and only drafts that are nearly certain still raise the tokens per
// second. The plan adds tokens, most likely first, while each one raises the step's expected
// tokens per unit of cost.

#include <cstdint>
#include <span>
#include <vector>

namespace pagedchat {

struct SpeculationConfig {
  int32_t max_draft_tokens = 6;  // K: drafted tokens per sequence and step, at most
  // Adapt k to each sequence's acceptance and to the batch (false: always the whole proposal,
  // up to K; for tests and to measure acceptance).
  bool adaptive = true;
  // What one more token in a decode step costs, as a fraction of a one-token step (measured on
  // the CPU backend: `bench speculative` prints it).
  double token_cost = 0.25;
};

// A sequence's chance that its next drafted token is kept: a decaying count of the drafts it
// kept and of the first rejections, with a prior of 1/2. While it drafts nothing the counts
// fade, so a sequence whose guesses were bad tries again later.
class AcceptanceEstimate {
 public:
  void observe(int32_t drafted, int32_t accepted);
  void fade();  // a step without drafts
  double rate() const { return (kept_ + 1.0) / (kept_ + rejected_ + 2.0); }

 private:
  double kept_ = 0.0, rejected_ = 0.0;
};

struct DraftCandidate {
  double acceptance = 0.5;    // AcceptanceEstimate::rate()
  int32_t max_tokens = 0;     // the proposal's length (or what may be asked of a drafter)
};

// Tokens to draft for each candidate (0..max_tokens, at most K each, at most `budget` in all).
// num_decoding: the sequences decoding this step (candidates or not); draft_cost: the drafter's
// cost per token (Drafter::token_cost).
std::vector<int32_t> plan_draft_lengths(std::span<const DraftCandidate> candidates, int32_t num_decoding,
                                        const SpeculationConfig& config, double draft_cost, int32_t budget);

}  // namespace pagedchat
