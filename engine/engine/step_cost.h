#pragma once
// What an engine step costs, counted from the model's shapes rather than measured: the
// floating-point operations of its matrix products and attention, and the bytes it must read at
// least (each weight matrix it uses once, and each chunk's KV context once). Their ratio, the
// arithmetic intensity, says which limit a step meets first: a prompt chunk multiplies every
// weight it reads by many tokens (compute-bound), a decode step reads every weight and the
// whole context for one token each (memory-bound). The prefill/decode lesson draws each step
// against the machine's roofline (engine/bench/roofline.h).
//
// Counted: 2 FLOP per multiply-add of every matrix (the output matrix only for the rows whose
// logits are taken; a mixture of experts' router for every token and num_experts_used experts
// per token), and QK^T plus PV over the positions each token sees (its sliding window on local
// layers). Read: the matrices (of a mixture of experts, each expert some token of the step
// used: the backend's count when the step carries it (StepRecord::experts_run, the distinct
// experts per layer, which grow with the batch far slower than its tokens), else at most
// min(num_experts, tokens x num_experts_used) per layer), and per chunk the K/V
// of the positions its tokens see. Not counted: norms, RoPE, softmax and activations (a few
// per cent of the FLOP), the embedding rows looked up, and writes.

#include <cstdint>

#include "engine/model/model_weights.h"

namespace pagedchat {

struct StepRecord;

struct StepCost {
  double flops = 0.0;
  double bytes_read = 0.0;
  double intensity() const { return bytes_read > 0 ? flops / bytes_read : 0.0; }  // FLOP per byte
};

// A model's shapes summed once, for the cost of any step on it.
class StepCostModel {
 public:
  StepCostModel() = default;
  // kv_token_bytes: one token's K and V over all layers, in the pool's element type.
  StepCostModel(const ModelWeights& weights, int64_t kv_token_bytes);

  // From each chunk's start position, tokens and logit rows.
  StepCost cost(const StepRecord& step) const;

 private:
  double dense_params_ = 0, dense_bytes_ = 0;    // every token: attention and dense FFN matrices, routers
  double head_params_ = 0, head_bytes_ = 0;      // the output matrix
  double expert_params_ = 0, expert_bytes_ = 0;  // one expert of each MoE layer, summed over those layers
  int num_experts_ = 0, num_experts_used_ = 0, num_moe_layers_ = 0;
  double kv_layer_token_bytes_ = 0;  // one token's K and V in one layer
  double attention_flops_per_position_ = 0;  // per layer: QK^T and PV of one query against one position
  int num_layers_ = 0, num_local_layers_ = 0;
  int64_t window_ = 0;  // the local layers' sliding window; 0: none
};

}  // namespace pagedchat
