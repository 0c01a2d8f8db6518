#pragma once
// What a request asks of the sampler. Defaults give greedy decoding.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace pagedchat {

namespace grammar {
struct Grammar;
}

struct SamplingParams {
  float temperature = 0.0f;        // 0: greedy (argmax, lowest id on ties)
  int top_k = 0;                   // 0: off
  float top_p = 1.0f;              // 1: off
  float min_p = 0.0f;              // 0: off; keeps tokens with p >= min_p * p_max
  float repetition_penalty = 1.0f; // 1: off; divides positive / multiplies negative logits
  float frequency_penalty = 0.0f;  // subtracted per occurrence
  float presence_penalty = 0.0f;   // subtracted once if present
  int penalty_last_n = 64;         // how many recent tokens the penalties look at (-1: all)
  uint64_t seed = 0;
  int max_tokens = 256;
  std::vector<std::string> stop;   // stop strings (the matched text is not emitted)
  bool ignore_eos = false;
  // Log-probabilities on each token event: -1 off; n >= 0 the chosen token's and the n most
  // likely tokens' (engine/sample/logprobs.h). At most 20, as the OpenAI API allows.
  int num_logprobs = -1;
  // Added to a token's logit before the penalties and every filter (OpenAI's logit_bias): -100
  // bans a token in practice, +100 all but forces it. Ids must be inside the vocabulary.
  std::vector<std::pair<int32_t, float>> logit_bias;
  // Structured output: null, or the grammar every reply must be a sentence of (a JSON schema's,
  // JSON's, a client's GBNF: engine/grammar). Each sampled position masks the tokens it
  // forbids, end-of-generation included until the reply is whole, and a reply that can go no
  // further ends there ("stop"). Shared: a server keeps one per schema, and its masks are
  // cached with it.
  std::shared_ptr<const grammar::Grammar> grammar;
  // With a grammar: where it allows one text only (a member's name once its first letters are
  // written), append that text's tokens at once, computed in one chunk, instead of sampling
  // them one step each (jump-forward). Such a sequence is not drafted for speculative decoding.
  bool jump_forward = true;
  // A model that thinks before it answers (<think> ... </think>): non-empty, the reply begins
  // inside its thinking, which lasts until this text. The grammar applies to the answer after
  // it, not to the thinking; reasoning_budget >= 0 caps the thinking at that many tokens, after
  // which "\n" + reasoning_end + "\n\n" is appended and the answer follows.
  std::string reasoning_end;
  int reasoning_budget = -1;

  // Empty if valid, else what is wrong (a bad request gets this as its error).
  std::string validate() const;
};

}  // namespace pagedchat
