// Reading and checking a Llama-family model's hyperparameters from GGUF metadata.
#include "engine/model/model_config.h"

#include <cmath>
#include <optional>

#include "engine/common/error.h"
#include "engine/gguf/gguf_file.h"

namespace pagedchat {
namespace {

int checked_int(const GgufFile& f, const std::string& key, int lo, int hi) {
  uint64_t v = f.get_uint(key);
  if (v < static_cast<uint64_t>(lo) || v > static_cast<uint64_t>(hi))
    fail("metadata '%s' = %llu is outside [%d, %d]", key.c_str(), (unsigned long long)v, lo, hi);
  return static_cast<int>(v);
}

// Gemma 3 as llama.cpp reads it (the file holds no key for most of this): norms written with
// the 1 of Gemma's (1 + w) already added by the converter, so they are plain RMSNorms here.
void read_gemma3(const GgufFile& f, ModelConfig& c) {
  c.post_norms = true;
  c.ffn_activation = FfnActivation::kGeluTanh;
  c.embedding_scale = std::sqrt(static_cast<float>(c.dim));
  // Gemma scales queries by query_pre_attn_scalar^-1/2: head_dim for every size but the 27B,
  // whose scalar is dim / heads (Gemma's own config; GGUF files carry no key for it).
  const int scalar = c.num_layers == 62 ? c.dim / c.num_heads : c.head_dim;
  c.attention_scale = 1.0f / std::sqrt(static_cast<float>(scalar));
  if (f.has("gemma3.attention.sliding_window")) {
    c.sliding_window = checked_int(f, "gemma3.attention.sliding_window", 0, 1 << 24);
    c.sliding_window_pattern = 6;
  }
  if (f.opt_float("gemma3.final_logit_softcapping").value_or(0.0) != 0.0)
    fail("final logit soft-capping is not supported");
}

// Qwen 3's mixture of experts as llama.cpp reads it: the expert count, how many a token uses, and
// each expert's feed-forward size (feed_forward_length / experts used when the key is missing);
// the router's top probabilities are always renormalized (llama.cpp's qwen3moe graph passes
// norm_w = true; it reads no expert_weights_scale for qwen3moe, so neither do we).
void read_moe(const GgufFile& f, ModelConfig& c) {
  const std::string& a = c.architecture;
  c.num_experts = checked_int(f, a + ".expert_count", 1, 1024);  // llama.cpp's LLAMA_MAX_EXPERTS
  c.num_experts_used = checked_int(f, a + ".expert_used_count", 1, c.num_experts);
  c.expert_ffn_dim = f.has(a + ".expert_feed_forward_length")
                         ? checked_int(f, a + ".expert_feed_forward_length", 1, 1 << 20)
                         : c.ffn_dim / c.num_experts_used;
  if (c.expert_ffn_dim < 1) fail("expert feed-forward size is 0");
  c.expert_weights_norm = true;
}

// gpt-oss as llama.cpp reads it (llama_model_openai_moe): biases on Q, K, V and the output
// projection, a sink logit per head, a sliding window on the even layers (a pattern of 2 unless
// the file says otherwise) rotating as the full ones do, and a mixture whose router has a bias,
// picks the top logits and softmaxes those, with experts that have biases and a clamped SwiGLU.
void read_gpt_oss(const GgufFile& f, ModelConfig& c) {
  c.qkv_bias = true;
  c.output_bias = true;
  c.attention_sinks = true;
  c.sliding_window = checked_int(f, "gpt-oss.attention.sliding_window", 1, 1 << 24);
  c.sliding_window_pattern = f.has("gpt-oss.attention.sliding_window_pattern")
                                 ? checked_int(f, "gpt-oss.attention.sliding_window_pattern", 1, 1024)
                                 : 2;
  c.local_rope = false;
  c.ffn_activation = FfnActivation::kSwigluOai;
  if (!f.has("gpt-oss.expert_feed_forward_length")) fail("metadata 'gpt-oss.expert_feed_forward_length' is missing");
  c.expert_weights_norm = false;
  c.expert_gating = ExpertGating::kSoftmaxOfTopK;
  c.expert_biases = true;
}

// Granite (IBM) as llama.cpp reads it: the logit scale is required, the others optional (0 or
// absent: none); rope.scaling.finetuned false means no layer rotates (NoPE throughout).
void read_granite(const GgufFile& f, ModelConfig& c) {
  auto positive = [&](const std::string& key, double fallback) {
    const double v = f.opt_float("granite." + key).value_or(fallback);
    if (!(v >= 0.0 && v < 1e6)) fail("granite.%s %g is not in [0, 1e6)", key.c_str(), v);
    return static_cast<float>(v);
  };
  if (!f.has("granite.logit_scale")) fail("metadata 'granite.logit_scale' is missing");
  c.logit_scale = positive("logit_scale", 1.0);
  if (c.logit_scale == 0.0f) fail("granite.logit_scale is 0");
  if (const float s = positive("residual_scale", 0.0); s != 0.0f) c.residual_scale = s;
  if (const float s = positive("embedding_scale", 0.0); s != 0.0f) c.embedding_scale = s;
  c.attention_scale = positive("attention.scale", 0.0);
  if (f.opt_bool("granite.rope.scaling.finetuned") == false) c.no_rope_layer_step = 1;
}

// YaRN as llama.cpp applies it to any architecture whose file says "yarn": the correction dims'
// betas fixed at 32 and 1 (llama.cpp reads keys for them only for a few other architectures),
// the original context from the file (else the training context), and cos/sin scaled by
// 1 + 0.1 ln(factor) in all (llama_context's yarn_attn_factor times ggml's rope_yarn factor),
// times rope.scaling.attn_factor. DeepSeek's log multiplier changes that scale: refused.
void read_yarn(const GgufFile& f, double factor, ModelConfig& c) {
  const std::string& a = c.architecture;
  if (!(factor >= 1.0 && factor <= 1024.0)) fail("yarn rope.scaling.factor %g is not in [1, 1024]", factor);
  if (f.opt_float(a + ".rope.scaling.yarn_log_multiplier").value_or(0.0) != 0.0)
    fail("YaRN with a log multiplier (rope.scaling.yarn_log_multiplier) is not supported");
  auto& y = c.rope_yarn;
  y.enabled = true;
  y.factor = static_cast<float>(factor);
  y.original_context_length = static_cast<float>(
      f.opt_uint(a + ".rope.scaling.original_context_length").value_or(static_cast<uint64_t>(c.context_length)));
  if (!(y.original_context_length >= 1.0f)) fail("rope.scaling.original_context_length is 0");
  const double attn = f.opt_float(a + ".rope.scaling.attn_factor").value_or(1.0);
  if (!(attn > 0.0 && attn < 16.0)) fail("rope.scaling.attn_factor %g is not in (0, 16)", attn);
  c.rope_attn_factor = static_cast<float>(attn * (y.factor > 1.0f ? 1.0 + 0.1 * std::log(y.factor) : 1.0));
}

}  // namespace

ModelConfig ModelConfig::from_gguf(const GgufFile& f) {
  ModelConfig c;
  c.architecture = f.get_string("general.architecture");
  const std::string& a = c.architecture;
  if (a != "llama" && a != "mistral" && a != "qwen2" && a != "qwen3" && a != "qwen3moe" && a != "gemma3" && a != "phi3" &&
      a != "smollm3" && a != "granite" && a != "gpt-oss")
    fail("architecture '%s' is not supported (llama, mistral, qwen2, qwen3, qwen3moe, gemma3, phi3, smollm3, granite and gpt-oss are)",
         a.c_str());
  c.name = f.opt_string("general.name").value_or(a);

  c.num_layers = checked_int(f, a + ".block_count", 1, 1024);
  c.dim = checked_int(f, a + ".embedding_length", 1, 1 << 16);
  c.num_heads = checked_int(f, a + ".attention.head_count", 1, 1024);
  c.num_kv_heads = f.has(a + ".attention.head_count_kv")
                       ? checked_int(f, a + ".attention.head_count_kv", 1, c.num_heads)
                       : c.num_heads;
  if (c.num_heads % c.num_kv_heads != 0)
    fail("head_count %d is not a multiple of head_count_kv %d", c.num_heads, c.num_kv_heads);
  c.head_dim = f.has(a + ".attention.key_length") ? checked_int(f, a + ".attention.key_length", 1, 1024)
                                                  : c.dim / c.num_heads;
  if (!f.has(a + ".attention.key_length") && c.dim % c.num_heads != 0)
    fail("embedding_length %d is not a multiple of head_count %d", c.dim, c.num_heads);
  if (f.has(a + ".attention.value_length") &&
      checked_int(f, a + ".attention.value_length", 1, 1024) != c.head_dim)
    fail("different key and value head sizes are not supported");
  if (c.head_dim % 2 != 0) fail("head size %d is odd", c.head_dim);
  // A mixture's files may leave the dense size out (it sizes nothing there but the default of
  // expert_feed_forward_length).
  c.ffn_dim = a == "gpt-oss" && !f.has(a + ".feed_forward_length") ? 0 : checked_int(f, a + ".feed_forward_length", 1, 1 << 20);
  c.context_length = checked_int(f, a + ".context_length", 1, 1 << 24);
  c.rms_eps = static_cast<float>(f.opt_float(a + ".attention.layer_norm_rms_epsilon").value_or(1e-5));
  if (!(c.rms_eps > 0.0f && c.rms_eps < 1.0f)) fail("layer_norm_rms_epsilon %g is not in (0, 1)", c.rms_eps);
  c.rope_freq_base = static_cast<float>(f.opt_float(a + ".rope.freq_base").value_or(10000.0));
  if (!(c.rope_freq_base > 1.0f)) fail("rope.freq_base %g must be > 1", c.rope_freq_base);
  c.rope_dim = f.has(a + ".rope.dimension_count") ? checked_int(f, a + ".rope.dimension_count", 2, c.head_dim)
                                                  : c.head_dim;
  if (c.rope_dim % 2 != 0) fail("rope.dimension_count %d is odd", c.rope_dim);
  const bool qwen3 = a == "qwen3" || a == "qwen3moe";
  c.rope_layout = a == "qwen2" || qwen3 || a == "gemma3" || a == "phi3" || a == "gpt-oss" ? RopeLayout::kNeox : RopeLayout::kAdjacentPairs;
  // qwen2 always has Q/K/V biases; llama and mistral files may carry them (llama.cpp loads
  // them when present), so their presence decides. qwen3 and gemma3 have none.
  c.qkv_bias = a == "qwen2" || ((a == "llama" || a == "mistral") && f.find_tensor("blk.0.attn_q.bias") != nullptr);
  c.qk_norm = qwen3 || a == "gemma3";
  if (a == "gemma3") read_gemma3(f, c);
  if (a == "qwen3moe" || a == "gpt-oss") read_moe(f, c);
  if (a == "gpt-oss") read_gpt_oss(f, c);
  if (a == "smollm3") c.no_rope_layer_step = 4;  // NoPE on every fourth layer, as llama.cpp hard-codes it
  if (a == "granite") read_granite(f, c);
  if (f.find_tensor("rope_factors_long.weight") || f.find_tensor("rope_factors_short.weight")) {
    if (!f.find_tensor("rope_factors_long.weight") || !f.find_tensor("rope_factors_short.weight"))
      fail("long-context RoPE needs both rope_factors_long and rope_factors_short");
    c.rope_long_factors = true;
    c.rope_original_context = static_cast<int>(
        f.opt_uint(a + ".rope.scaling.original_context_length").value_or(static_cast<uint64_t>(c.context_length)));
    if (c.rope_original_context < 1 || c.rope_original_context > c.context_length)
      fail("rope.scaling.original_context_length %d is not in 1..%d", c.rope_original_context, c.context_length);
    c.rope_attn_factor = static_cast<float>(f.opt_float(a + ".rope.scaling.attn_factor").value_or(1.0));
    if (!(c.rope_attn_factor > 0.0f && c.rope_attn_factor < 16.0f))
      fail("rope.scaling.attn_factor %g is not in (0, 16)", c.rope_attn_factor);
  }

  // Scaling: "linear" divides every frequency by the factor (also what a factor with no type
  // means, as in llama.cpp); "llama3" scales low frequencies only. Llama 3.1+ files usually
  // carry no keys but a rope_freqs tensor of divisors instead (read by ModelWeights).
  std::string scaling = f.opt_string(a + ".rope.scaling.type").value_or("");
  std::optional<double> factor = f.opt_float(a + ".rope.scaling.factor");
  if (scaling.empty()) scaling = factor ? "linear" : "none";
  // A factor of 0 means "none" in files llama.cpp loads.
  if (factor && *factor == 0.0) factor = 1.0;
  if (scaling == "linear") {
    c.rope_linear_factor = static_cast<float>(factor.value_or(1.0));
    if (!(c.rope_linear_factor > 0.0f)) fail("rope.scaling.factor %g must be > 0", c.rope_linear_factor);
  } else if (scaling == "llama3") {
    c.rope_llama3.enabled = true;
    c.rope_llama3.factor = static_cast<float>(factor.value_or(8.0));
  } else if (scaling == "yarn") {
    read_yarn(f, factor.value_or(1.0), c);
  } else if (scaling != "none") {
    fail("rope scaling type '%s' is not supported", scaling.c_str());
  }
  if (c.rope_llama3.enabled) {
    auto& s = c.rope_llama3;
    s.low_freq_factor = static_cast<float>(f.opt_float(a + ".rope.scaling.low_freq_factor").value_or(1.0));
    s.high_freq_factor = static_cast<float>(f.opt_float(a + ".rope.scaling.high_freq_factor").value_or(4.0));
    s.original_context_length =
        static_cast<float>(f.opt_float(a + ".rope.scaling.original_context_length").value_or(8192.0));
    if (!(s.factor >= 1.0f) || !(s.high_freq_factor > s.low_freq_factor))
      fail("llama3 rope scaling parameters are inconsistent");
  }

  const GgufTensorInfo* emb = f.find_tensor("token_embd.weight");
  if (!emb || emb->shape.size() != 2) fail("tensor 'token_embd.weight' is missing or not 2-D");
  if (emb->shape[0] != c.dim) fail("token_embd.weight rows have %lld elements, expected %d", (long long)emb->shape[0], c.dim);
  c.vocab_size = static_cast<int>(emb->shape[1]);
  return c;
}

}  // namespace pagedchat
