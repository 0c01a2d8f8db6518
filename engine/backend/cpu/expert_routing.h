#pragma once
// A mixture-of-experts layer's routing, after its router's logits: which experts each token of a
// batch uses and with what weight, and the batch's tokens grouped by expert so that each expert's
// matrices are read once per step, whatever the number of tokens that chose it.

#include <cstdint>
#include <vector>

#include "engine/model/model_config.h"

namespace pagedchat::cpu {

// Per token: the softmax of its router logits ([num_tokens, num_experts]), the num_experts_used
// most probable experts (equal probabilities: the lower index first), their probabilities
// renormalized to sum to 1 when the config says so (the sum held at least 2^-14, as llama.cpp
// clamps it): llama.cpp's build_moe_ffn with softmax gating. With ExpertGating::kSoftmaxOfTopK
// (gpt-oss): the num_experts_used largest logits (equal: the lower index), weighted by the
// softmax of those alone.
// experts and weights: [num_tokens * num_experts_used], a token's in order of probability.
void route_experts(const float* logits, int64_t num_tokens, const ModelConfig& config, int32_t* experts,
                   float* weights);

// The (token, slot) pairs of a batch grouped by expert: expert e's are entries [offset[e],
// offset[e + 1]) of `entries`, each token * slots_per_token + slot, in token order.
struct ExpertGroups {
  std::vector<int32_t> offset;   // [num_experts + 1]
  std::vector<int32_t> entries;  // [num_tokens * slots_per_token]
  int32_t count(int expert) const { return offset[expert + 1] - offset[expert]; }
};
void group_by_expert(const int32_t* experts, int64_t num_tokens, int slots_per_token, int num_experts,
                     ExpertGroups& groups);

}  // namespace pagedchat::cpu
