#pragma once
// Log-probabilities of the model's next-token distribution, as clients of the OpenAI API ask
// for them (logprobs / top_logprobs): log-softmax of the raw logits, before temperature,
// penalties or truncation, so they describe the model rather than the sampling settings.

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace pagedchat {

struct TokenLogprobs {
  float logprob = 0.0f;                           // of the chosen token
  std::vector<std::pair<int32_t, float>> top;     // the num_top most likely tokens, most likely first
};

// logits: [vocab]. num_top is clamped to the vocabulary; ties go to the lower id.
TokenLogprobs token_logprobs(std::span<const float> logits, int32_t chosen, int num_top);

}  // namespace pagedchat
