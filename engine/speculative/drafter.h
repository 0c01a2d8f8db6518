#pragma once
// What proposes draft tokens for speculative decoding: a guess at the next few tokens of a
// decoding sequence that the target model then checks, all of them in one forward pass. A
// drafter only guesses; exactness is the verifier's (rejection.h), so a bad guess costs time,
// never a different output.

#include <cstdint>
#include <span>
#include <vector>

#include "engine/kv/kv_types.h"
#include "engine/sample/sampler.h"

namespace pagedchat {

struct DraftJob {
  SequenceId seq = -1;
  // The sequence's tokens: prompt and generated, its last sampled token (not computed yet) last.
  std::span<const int32_t> tokens;
  int32_t max_tokens = 0;                 // propose at most this many
  const SamplingParams* params = nullptr;  // how the target samples (a drafter that samples follows it)
  // Out: the proposal, and for a drafter that samples, the distribution each token was drawn
  // from (empty: each token was proposed with certainty, as prompt lookup does).
  std::vector<int32_t> draft;
  std::vector<TokenProbs> draft_probs;
};

class Drafter {
 public:
  virtual ~Drafter() = default;
  virtual const char* name() const = 0;
  // Fills each job's draft (possibly empty). Engine thread; one call per step.
  virtual void propose(std::span<DraftJob> jobs) = 0;
  // The sequence has ended: drop what is kept for it.
  virtual void forget(SequenceId) {}
  // What drafting one token costs, as a fraction of one decode step of the target. 0 for a
  // lookup; for a draft model about its share of the weights read per token. The engine
  // proposes first and then picks how much of each proposal to verify when drafting is free,
  // and decides how many tokens to ask for before proposing when it is not.
  virtual double token_cost() const { return 0.0; }
};

}  // namespace pagedchat
