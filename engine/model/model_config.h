#pragma once
// Hyperparameters of a Llama-family model, read from GGUF metadata ("<arch>.*" keys).
// Supported architectures: llama (SmolLM2, TinyLlama, Llama 2/3.x, Mistral files), mistral,
// qwen2 (QKV bias, NEOX rotary layout). Others are refused with a clear error.

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
  bool qkv_bias = false;  // Q/K/V projections have biases (qwen2; optional in llama files)

  int q_dim() const { return num_heads * head_dim; }
  int kv_dim() const { return num_kv_heads * head_dim; }

  // Reads and checks the config; throws Error naming the key or the unsupported feature.
  static ModelConfig from_gguf(const GgufFile& file);
};

}  // namespace pagedchat
