#pragma once
// The engine's record of a sequence being generated (private to engine/engine/*.cpp): what the
// scheduler sees plus the per-sequence sampling and speculation state.

#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/engine/engine.h"
#include "engine/grammar/grammar_matcher.h"
#include "engine/sample/reply_text.h"
#include "engine/sample/sampler.h"
#include "engine/speculative/speculation_policy.h"

namespace pagedchat {

struct Engine::Live {
  SchedSequence s;
  RequestId request = -1;
  int index = 0;
  int num_to_fork = 0;  // n - 1 samples still to fork off once the prompt's logits arrive
  std::vector<SamplingParams> fork_params;  // per-sample params of those forks (Request::sample_params)
  int num_generated = 0;
  int32_t num_prompt = 0;  // s.tokens[0, num_prompt) are prompt (prefill); later ones generated
  SamplingParams params;
  bool park_when_done = false;
  Sampler sampler;
  ReplyText text;
  // Structured output: where the reply stands in params.grammar (none without one).
  std::optional<grammar::GrammarMatcher> matcher;
  // A thinking model's reply (params.reasoning_end): still thinking, for how many tokens, and
  // the thinking's last bytes (where its end marker may be arriving).
  bool in_reasoning = false;
  int num_reasoning_tokens = 0;
  std::string reasoning_tail;
  // Speculative decoding: the drafter's distributions of the drafts in s.tokens (empty for a
  // lookup), the acceptance so far, and the counts the token and finished events carry.
  std::vector<TokenProbs> draft_probs;
  AcceptanceEstimate acceptance;
  SpeculationCounts spec;
  // Beam search: the group this sequence is a beam of, and its summed log-probability.
  BeamGroup* beam = nullptr;
  double beam_logprob = 0.0;

  explicit Live(const SamplingParams& p) : params(p), sampler(p), text(p.stop), in_reasoning(!p.reasoning_end.empty()) {
    if (p.grammar) matcher.emplace(p.grammar);
  }
};

// One beam-search request: its live beams in rank order, the top log-probabilities each has
// reported since the last selection, and the hypotheses that ended with EOS.
struct Engine::BeamGroup {
  struct Hypothesis {
    std::vector<int32_t> tokens;  // generated, EOS excluded
    double logprob = 0.0;         // EOS included
    bool ended = false;           // with EOS (else cut at its length)
    double score = 0.0;           // logprob / length ^ length_penalty
  };
  RequestId request = -1;
  int width = 2;
  int num_return = 1;
  float length_penalty = 1.0f;
  SamplingParams params;  // max_tokens, ignore_eos and the stop strings of the request
  std::vector<SequenceId> live;
  std::unordered_map<SequenceId, std::vector<std::pair<int32_t, float>>> reported;
  std::vector<Hypothesis> finished;
};

}  // namespace pagedchat
