#pragma once
// The tensors of a Llama-family model, located in a mapped GGUF file and checked against the
// config (names, shapes, types). Nothing is copied: matrices point into the mapping, which the
// GgufFile held here keeps alive. Small float vectors (norms, biases) are converted to f32.

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/common/ggml_type.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model_config.h"

namespace pagedchat {

// A row-major matrix [rows, cols] stored in a GGML type; row r starts at data + r * row_bytes.
struct WeightMatrix {
  GgmlType type = GgmlType::F32;
  const uint8_t* data = nullptr;
  int64_t rows = 0;  // output features
  int64_t cols = 0;  // input features (contiguous)
  size_t row_bytes = 0;
  const uint8_t* row(int64_t r) const { return data + static_cast<size_t>(r) * row_bytes; }
};

// One expert of a mixture-of-experts layer: a gated feed-forward block of its own, whose matrices
// are slices of the file's three [experts, rows, cols] tensors.
struct ExpertWeights {
  WeightMatrix gate;  // [expert_ffn_dim, dim]
  WeightMatrix up;    // [expert_ffn_dim, dim]
  WeightMatrix down;  // [dim, expert_ffn_dim]
};

struct LayerWeights {
  std::vector<float> attn_norm;  // [dim]
  WeightMatrix wq;               // [q_dim, dim]
  WeightMatrix wk;               // [kv_dim, dim]
  WeightMatrix wv;               // [kv_dim, dim]
  WeightMatrix wo;               // [dim, q_dim]
  std::vector<float> bq, bk, bv; // [q_dim], [kv_dim], [kv_dim]; empty without QKV bias
  std::vector<float> bo;         // [dim]; empty without an output bias
  std::vector<float> attn_sinks; // [num_heads]; empty without attention sinks
  std::vector<float> q_norm, k_norm;  // [head_dim] each; empty without QK-norm
  std::vector<float> post_attn_norm;  // [dim]; empty without post-block norms
  std::vector<float> ffn_norm;   // [dim]
  WeightMatrix w_gate;           // [ffn_dim, dim]
  WeightMatrix w_up;             // [ffn_dim, dim]
  WeightMatrix w_down;           // [dim, ffn_dim]
  // Mixture of experts (config.is_moe()), in place of w_gate/w_up/w_down, which stay empty.
  WeightMatrix router;                 // [num_experts, dim]
  std::vector<ExpertWeights> experts;  // [num_experts]
  // With expert biases (gpt-oss): the router's [num_experts], and each expert's in turn:
  // [num_experts][expert_ffn_dim] for gate and up, [num_experts][dim] for down. Else empty.
  std::vector<float> router_bias, expert_gate_bias, expert_up_bias, expert_down_bias;
  std::vector<float> post_ffn_norm;  // [dim]; empty without post-block norms
};

struct ModelWeights {
  GgufFile file;                    // owns the mapping the matrices point into
  ModelConfig config;
  WeightMatrix token_embedding;     // [vocab, dim]
  std::vector<LayerWeights> layers; // [num_layers]
  std::vector<float> output_norm;   // [dim]
  WeightMatrix output;              // [vocab, dim]; the token embedding when tied
  bool tied_embeddings = false;
  std::vector<float> rope_inv_freq; // [rope_dim / 2], scaling applied
  std::vector<float> rope_inv_freq_local; // [rope_dim / 2] of the local layers; empty without sliding windows
  std::vector<float> rope_inv_freq_long;  // [rope_dim / 2] LongRoPE's long factors; empty without them

  // The global layers' frequencies for an engine whose sequences hold up to max_context tokens:
  // LongRoPE's long factors past the original context, as llama.cpp chooses by its context size
  // (one choice for the whole sequence, so the cached K stay valid as it grows).
  const std::vector<float>& rope_inv_freq_for(int max_context) const {
    return !rope_inv_freq_long.empty() && max_context > config.rope_original_context ? rope_inv_freq_long : rope_inv_freq;
  }
  // A layer's rotary frequencies (LongRoPE's short set for the global layers).
  const std::vector<float>& rope_inv_freq_of(int layer) const {
    return config.uses_local_rope(layer) ? rope_inv_freq_local : rope_inv_freq;
  }
  // The matrices' bytes when no file holds them (random_model.h); empty for a loaded file.
  std::vector<std::unique_ptr<uint8_t[]>> owned_tensors;

  // Throws Error naming the missing or malformed tensor.
  static ModelWeights load(GgufFile file);
  // Bytes of the matrices read per token: every dense matrix, and of a mixture of experts the
  // router and the experts a token uses (num_experts_used of them).
  uint64_t weight_bytes() const;
};

// Inverse rotary frequencies of a config: per-pair divisors `factors` ([rope_dim / 2], from a
// rope_freqs tensor) when given, else Llama 3 scaling from the config; linear scaling after.
std::vector<float> rope_inverse_frequencies(const ModelConfig& config, std::vector<float> factors = {});
// Those of the config's local (sliding-window) layers: their own base, never scaled.
std::vector<float> local_rope_inverse_frequencies(const ModelConfig& config);

}  // namespace pagedchat
