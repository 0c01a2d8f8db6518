#pragma once
// Hyperparameters of a Llama-family model, read from GGUF metadata ("<arch>.*" keys).
// Supported architectures: llama (SmolLM2, TinyLlama, Llama 2/3.x, Mistral files), mistral,
// qwen2 (QKV bias, NEOX rotary layout), qwen3 (QK-norm, no bias), gemma3 (QK-norm, post-block
// norms, GELU gate, scaled embeddings, sliding-window attention on five layers of six, with
// their own RoPE base), phi3 (Phi-3 / Phi-4-mini: fused Q|K|V and gate|up tensors, split on
// load; the long-context RoPE factors are refused for now), qwen3moe (qwen3's attention, and a
// mixture of experts in place of each feed-forward block), smollm3 (llama's layers, every fourth
// without RoPE), granite (llama's layers with IBM's multipliers on the embeddings, the scores,
// each block's output and the logits), gpt-oss (OpenAI's: biases on every attention projection,
// a learned sink logit per head, sliding windows on every other layer, YaRN RoPE, and a mixture
// of experts with biases, softmax over the chosen experts' logits and a clamped SwiGLU). Others
// are refused with a clear error.

#include <cmath>
#include <cstdint>
#include <string>

namespace pagedchat {

class GgufFile;

// How rotary dimensions are paired: GGUF llama files pair adjacent dims (2i, 2i+1) because
// the converter permutes Q/K; qwen2 pairs i with i + rot_dim/2 (the NEOX layout).
enum class RopeLayout { kAdjacentPairs, kNeox };

struct RopeScalingLlama3 {
  bool enabled = false;
  float factor = 1.0f;
  float low_freq_factor = 1.0f;
  float high_freq_factor = 4.0f;
  float original_context_length = 8192.0f;
};

// YaRN (gpt-oss; ggml's rope_yarn): each pair's angle mixes the interpolated one (divided by
// factor) and the original by a ramp over the pairs between two correction dims, found from
// original_context and beta_fast / beta_slow; cos and sin are scaled by 1 + 0.1 ln(factor)
// (ModelConfig::rope_attn_factor carries it).
struct RopeScalingYarn {
  bool enabled = false;
  float factor = 1.0f;
  float original_context_length = 4096.0f;
  float beta_fast = 32.0f;
  float beta_slow = 1.0f;
};

// The gate's activation in the gated feed-forward block: SiLU (SwiGLU: Llama, Qwen), GELU
// with the tanh approximation (GeGLU: Gemma), or gpt-oss's SwiGLU: gate clamped above at 7 times
// sigmoid(1.702 gate), times (up clamped to [-7, 7]) + 1.
enum class FfnActivation { kSilu, kGeluTanh, kSwigluOai };

// How a mixture's router turns its logits into the chosen experts' weights: softmax over every
// expert, then the top k (qwen3moe); or the top k logits, then softmax over those k (gpt-oss).
enum class ExpertGating { kSoftmax, kSoftmaxOfTopK };

struct ModelConfig {
  std::string architecture;
  std::string name;
  int num_layers = 0;
  int dim = 0;          // hidden size
  int num_heads = 0;    // query heads
  int num_kv_heads = 0; // key/value heads (GQA when fewer than num_heads)
  int head_dim = 0;
  int ffn_dim = 0;
  int vocab_size = 0;
  int context_length = 0;
  float rms_eps = 1e-5f;
  float rope_freq_base = 10000.0f;
  int rope_dim = 0;     // leading dims of each head that rotate
  RopeLayout rope_layout = RopeLayout::kAdjacentPairs;
  float rope_linear_factor = 1.0f;  // linear scaling: positions divided by this
  RopeScalingLlama3 rope_llama3;
  RopeScalingYarn rope_yarn;
  // LongRoPE (Phi-3 128k, Phi-3.5, Phi-4-mini): per-pair frequency divisors in two sets
  // (ModelWeights: short, and long for contexts past rope_original_context), and cos/sin scaled
  // by rope_attn_factor, as llama.cpp reads rope.scaling.attn_factor and original_context_length.
  bool rope_long_factors = false;
  int rope_original_context = 0;
  float rope_attn_factor = 1.0f;
  bool qkv_bias = false;  // Q/K/V projections have biases (qwen2; optional in llama files)
  bool output_bias = false;     // the attention's output projection has a bias (gpt-oss)
  bool attention_sinks = false; // a learned logit per query head joins each softmax's sum (gpt-oss)
  bool qk_norm = false;   // RMSNorm over each Q and K head before RoPE (qwen3, gemma3)
  bool post_norms = false;  // RMSNorm of each block's output before its residual add (gemma3)
  FfnActivation ffn_activation = FfnActivation::kSilu;
  float embedding_scale = 1.0f;  // token embeddings are multiplied by this (gemma3: sqrt(dim))
  float attention_scale = 0.0f;  // scores are q.k times this; 0: 1/sqrt(head_dim)
  float residual_scale = 1.0f;   // each block's output times this before its residual add (granite)
  float logit_scale = 1.0f;      // the logits divided by this (granite)
  // Sliding-window attention (gemma3): on a local layer a token attends to its last
  // sliding_window positions only (itself included), and RoPE uses rope_freq_base_local,
  // unscaled; every sliding_window_pattern-th layer is global (every position, the file's
  // RoPE base and scaling). 0: every layer is global. gpt-oss's local layers rotate as its global
  // ones do (local_rope false).
  int sliding_window = 0;
  int sliding_window_pattern = 0;
  bool local_rope = true;
  float rope_freq_base_local = 10000.0f;
  // Layers without rotary embedding (smollm3: NoPE on every fourth): layer l rotates unless
  // (l + 1) % no_rope_layer_step == 0. 0: every layer rotates.
  int no_rope_layer_step = 0;
  // Mixture of experts (qwen3moe): each layer's feed-forward block is num_experts gated blocks of
  // expert_ffn_dim; a router (softmax over the experts) picks num_experts_used of them per token,
  // whose outputs are summed with the router's probabilities as weights, renormalized to sum to 1
  // when expert_weights_norm. 0 experts: a dense model.
  int num_experts = 0;
  int num_experts_used = 0;
  int expert_ffn_dim = 0;
  bool expert_weights_norm = false;
  ExpertGating expert_gating = ExpertGating::kSoftmax;
  bool expert_biases = false;  // the router and every expert matrix have biases (gpt-oss)

  bool is_local_layer(int layer) const {
    return sliding_window > 0 && (layer + 1) % sliding_window_pattern != 0;
  }
  // The keys a token of `layer` attends to at most (0: all before it).
  int window_of(int layer) const { return is_local_layer(layer) ? sliding_window : 0; }
  // Whether a layer rotates with the local layers' own frequencies (gemma3's local base).
  bool uses_local_rope(int layer) const { return local_rope && is_local_layer(layer); }
  float query_scale() const { return attention_scale > 0.0f ? attention_scale : 1.0f / std::sqrt(static_cast<float>(head_dim)); }
  // Whether the forward pass is Llama's (what the CUDA backend implements).
  bool is_plain_llama() const {
    return !qk_norm && !post_norms && ffn_activation == FfnActivation::kSilu && embedding_scale == 1.0f &&
           attention_scale == 0.0f && sliding_window == 0 && !rope_long_factors && !is_moe() &&
           no_rope_layer_step == 0 && residual_scale == 1.0f && logit_scale == 1.0f && !output_bias &&
           !attention_sinks && !rope_yarn.enabled;
  }
  bool is_moe() const { return num_experts > 0; }
  bool rotates(int layer) const { return no_rope_layer_step == 0 || (layer + 1) % no_rope_layer_step != 0; }
  int q_dim() const { return num_heads * head_dim; }
  int kv_dim() const { return num_kv_heads * head_dim; }

  // Reads and checks the config; throws Error naming the key or the unsupported feature.
  static ModelConfig from_gguf(const GgufFile& file);
};

}  // namespace pagedchat
