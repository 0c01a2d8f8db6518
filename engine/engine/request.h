#pragma once
// What a client asks of the engine: a prompt to continue, how to sample, and how many samples.

#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/kv/kv_types.h"
#include "engine/sample/sampling_params.h"

namespace pagedchat {

using RequestId = int64_t;

struct Request {
  // Token ids. With continue_seq: the tokens to append to what that sequence holds (its
  // last sampled token included, which a parked sequence has not stored yet).
  std::vector<int32_t> prompt;
  SamplingParams params;
  int n = 1;  // parallel samples: the prompt is computed once and forked n ways (seeds seed + i)
  // Compare with different settings: empty, or n entries, sample i sampling with
  // sample_params[i] (its own seed, as given) instead of params. The prompt is still computed
  // once; params is then unused.
  std::vector<SamplingParams> sample_params;
  // Keep each finished sequence resident (parked) for a next turn or a fork, instead of
  // freeing it; Engine::release() frees it.
  bool park_when_done = false;
  // A parked sequence to continue (the next turn of a chat, or a fork's first turn): only the
  // new tokens are computed. -1: a new sequence.
  SequenceId continue_seq = -1;
  // Beam search (beam_width >= 2): the beam_width most likely continuations by summed
  // log-probability are kept each step, as forks of one sequence (they share the prompt's and
  // their common prefix's blocks; copy-on-write where they diverge; a pruned beam's blocks are
  // freed). Deterministic: the sampling settings but max_tokens, ignore_eos and stop are not
  // used. The n best hypotheses (n <= beam_width) come out at the end, best first, ranked by
  // sum of log-probabilities / (tokens ^ length_penalty); nothing streams before. No beam is
  // parked at the end; a continued sequence (continue_seq) becomes the first beam and goes too.
  int beam_width = 0;
  float length_penalty = 1.0f;
  // Prefix-cache isolation (vLLM's cache_salt): 0 shares cached blocks with every request;
  // another value only with requests of the same salt (cache_salt_of() makes one from a string).
  uint64_t cache_salt = 0;
};

// A nonzero salt from a client's string (FNV-1a; stable across runs and builds).
uint64_t cache_salt_of(std::string_view text);

}  // namespace pagedchat
