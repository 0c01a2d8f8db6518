// Locating and checking every weight tensor of a model, and the RoPE frequencies.
#include "engine/model/model_weights.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "engine/common/error.h"
#include "engine/quant/quant.h"

namespace pagedchat {
namespace {

const GgufTensorInfo& require(const GgufFile& f, const std::string& name) {
  const GgufTensorInfo* t = f.find_tensor(name);
  if (!t) fail("tensor '%s' is missing", name.c_str());
  return *t;
}

WeightMatrix matrix(const GgufFile& f, const std::string& name, int64_t rows, int64_t cols) {
  const GgufTensorInfo& t = require(f, name);
  if (t.shape.size() != 2 || t.shape[0] != cols || t.shape[1] != rows)
    fail("tensor '%s' has shape [%lld, %lld], expected [%lld, %lld]", name.c_str(), (long long)t.shape[0],
         t.shape.size() > 1 ? (long long)t.shape[1] : 1LL, (long long)cols, (long long)rows);
  auto traits = ggml_type_traits(t.type);
  if (!traits.computable) fail("tensor '%s' has type %s, which is not supported", name.c_str(), std::string(traits.name).c_str());
  WeightMatrix m;
  m.type = t.type;
  m.data = f.tensor_data(t);
  m.rows = rows;
  m.cols = cols;
  m.row_bytes = ggml_row_size(t.type, cols);
  return m;
}

std::vector<float> vector_f32(const GgufFile& f, const std::string& name, int64_t n) {
  const GgufTensorInfo& t = require(f, name);
  if (t.num_elements() != n)
    fail("tensor '%s' has %lld elements, expected %lld", name.c_str(), (long long)t.num_elements(), (long long)n);
  if (t.type != GgmlType::F32 && t.type != GgmlType::F16 && t.type != GgmlType::BF16)
    fail("tensor '%s' must be F32, F16 or BF16", name.c_str());
  std::vector<float> v(static_cast<size_t>(n));
  dequantize_row(t.type, f.tensor_data(t), v.data(), n);
  for (float x : v)
    if (!std::isfinite(x)) fail("tensor '%s' holds a non-finite value", name.c_str());
  return v;
}

// The experts of a [num_experts, rows, cols] tensor: one matrix each, pointing into its slice.
std::vector<WeightMatrix> expert_matrices(const GgufFile& f, const std::string& name, int64_t num_experts, int64_t rows,
                                          int64_t cols) {
  const GgufTensorInfo& t = require(f, name);
  if (t.shape.size() != 3 || t.shape[0] != cols || t.shape[1] != rows || t.shape[2] != num_experts)
    fail("tensor '%s' is not [%lld, %lld, %lld] (experts of [rows, cols])", name.c_str(), (long long)cols,
         (long long)rows, (long long)num_experts);
  auto traits = ggml_type_traits(t.type);
  if (!traits.computable) fail("tensor '%s' has type %s, which is not supported", name.c_str(), std::string(traits.name).c_str());
  std::vector<WeightMatrix> out(static_cast<size_t>(num_experts));
  const size_t row_bytes = ggml_row_size(t.type, cols);
  for (int64_t e = 0; e < num_experts; ++e) {
    WeightMatrix& m = out[static_cast<size_t>(e)];
    m.type = t.type;
    m.data = f.tensor_data(t) + static_cast<size_t>(e * rows) * row_bytes;
    m.rows = rows;
    m.cols = cols;
    m.row_bytes = row_bytes;
  }
  return out;
}

// Rows [first, first + n) of m: a matrix of its own that points into m's bytes.
WeightMatrix rows_of(const WeightMatrix& m, int64_t first, int64_t n) {
  WeightMatrix v = m;
  v.data = m.data + static_cast<size_t>(first) * m.row_bytes;
  v.rows = n;
  return v;
}

}  // namespace

ModelWeights ModelWeights::load(GgufFile file) {
  ModelWeights w;
  w.file = std::move(file);
  const GgufFile& f = w.file;
  w.config = ModelConfig::from_gguf(f);
  const ModelConfig& c = w.config;
  w.token_embedding = matrix(f, "token_embd.weight", c.vocab_size, c.dim);
  w.output_norm = vector_f32(f, "output_norm.weight", c.dim);
  if (f.find_tensor("output.weight")) {
    w.output = matrix(f, "output.weight", c.vocab_size, c.dim);
  } else {
    w.output = w.token_embedding;
    w.tied_embeddings = true;
  }
  // Layers the header does not count would be left out of every forward pass without a word:
  // a file whose block_count disagrees with its tensors is refused.
  for (const GgufTensorInfo& t : f.tensors()) {
    if (t.name.rfind("blk.", 0) != 0) continue;
    const long layer = std::strtol(t.name.c_str() + 4, nullptr, 10);
    if (layer >= c.num_layers)
      fail("tensor '%s' belongs to layer %ld, but the header's block_count says %d layers", t.name.c_str(), layer, c.num_layers);
  }
  w.layers.resize(c.num_layers);
  for (int l = 0; l < c.num_layers; ++l) {
    std::string p = "blk." + std::to_string(l) + ".";
    LayerWeights& L = w.layers[l];
    L.attn_norm = vector_f32(f, p + "attn_norm.weight", c.dim);
    if (f.find_tensor(p + "attn_qkv.weight")) {
      // Phi-3 stores Q, K and V as one matrix, rows in that order: three views of it.
      const WeightMatrix qkv = matrix(f, p + "attn_qkv.weight", c.q_dim() + 2 * c.kv_dim(), c.dim);
      L.wq = rows_of(qkv, 0, c.q_dim());
      L.wk = rows_of(qkv, c.q_dim(), c.kv_dim());
      L.wv = rows_of(qkv, c.q_dim() + c.kv_dim(), c.kv_dim());
    } else {
      L.wq = matrix(f, p + "attn_q.weight", c.q_dim(), c.dim);
      L.wk = matrix(f, p + "attn_k.weight", c.kv_dim(), c.dim);
      L.wv = matrix(f, p + "attn_v.weight", c.kv_dim(), c.dim);
    }
    L.wo = matrix(f, p + "attn_output.weight", c.dim, c.q_dim());
    if (c.output_bias) L.bo = vector_f32(f, p + "attn_output.bias", c.dim);
    if (c.attention_sinks) L.attn_sinks = vector_f32(f, p + "attn_sinks.weight", c.num_heads);
    if (c.qkv_bias) {
      L.bq = vector_f32(f, p + "attn_q.bias", c.q_dim());
      L.bk = vector_f32(f, p + "attn_k.bias", c.kv_dim());
      L.bv = vector_f32(f, p + "attn_v.bias", c.kv_dim());
    }
    if (c.qk_norm) {
      L.q_norm = vector_f32(f, p + "attn_q_norm.weight", c.head_dim);
      L.k_norm = vector_f32(f, p + "attn_k_norm.weight", c.head_dim);
    }
    if (c.post_norms) {
      L.post_attn_norm = vector_f32(f, p + "post_attention_norm.weight", c.dim);
      L.post_ffn_norm = vector_f32(f, p + "post_ffw_norm.weight", c.dim);
    }
    // gpt-oss names its pre-feed-forward norm post_attention_norm (it has no other).
    L.ffn_norm = vector_f32(f, p + (c.architecture == "gpt-oss" ? "post_attention_norm.weight" : "ffn_norm.weight"), c.dim);
    if (c.is_moe()) {
      // The router stays in float in llama.cpp's quantizations; any computable type is read.
      L.router = matrix(f, p + "ffn_gate_inp.weight", c.num_experts, c.dim);
      const auto gate = expert_matrices(f, p + "ffn_gate_exps.weight", c.num_experts, c.expert_ffn_dim, c.dim);
      const auto up = expert_matrices(f, p + "ffn_up_exps.weight", c.num_experts, c.expert_ffn_dim, c.dim);
      const auto down = expert_matrices(f, p + "ffn_down_exps.weight", c.num_experts, c.dim, c.expert_ffn_dim);
      L.experts.resize(c.num_experts);
      for (int e = 0; e < c.num_experts; ++e) L.experts[e] = {gate[e], up[e], down[e]};
      if (c.expert_biases) {
        const int64_t ne = c.num_experts, ef = c.expert_ffn_dim;
        L.router_bias = vector_f32(f, p + "ffn_gate_inp.bias", ne);
        L.expert_gate_bias = vector_f32(f, p + "ffn_gate_exps.bias", ne * ef);
        L.expert_up_bias = vector_f32(f, p + "ffn_up_exps.bias", ne * ef);
        L.expert_down_bias = vector_f32(f, p + "ffn_down_exps.bias", ne * c.dim);
      }
      continue;
    }
    if (c.architecture == "phi3" && !f.find_tensor(p + "ffn_gate.weight")) {
      // Phi-3's ffn_up holds the gate's rows, then the up projection's.
      const WeightMatrix gate_up = matrix(f, p + "ffn_up.weight", 2 * c.ffn_dim, c.dim);
      L.w_gate = rows_of(gate_up, 0, c.ffn_dim);
      L.w_up = rows_of(gate_up, c.ffn_dim, c.ffn_dim);
    } else {
      L.w_gate = matrix(f, p + "ffn_gate.weight", c.ffn_dim, c.dim);
      L.w_up = matrix(f, p + "ffn_up.weight", c.ffn_dim, c.dim);
    }
    L.w_down = matrix(f, p + "ffn_down.weight", c.dim, c.ffn_dim);
  }
  if (c.rope_long_factors) {
    w.rope_inv_freq = rope_inverse_frequencies(c, vector_f32(f, "rope_factors_short.weight", c.rope_dim / 2));
    w.rope_inv_freq_long = rope_inverse_frequencies(c, vector_f32(f, "rope_factors_long.weight", c.rope_dim / 2));
  } else {
    w.rope_inv_freq = rope_inverse_frequencies(
        c, f.find_tensor("rope_freqs.weight") ? vector_f32(f, "rope_freqs.weight", c.rope_dim / 2) : std::vector<float>{});
  }
  if (c.sliding_window > 0 && c.local_rope) w.rope_inv_freq_local = local_rope_inverse_frequencies(c);
  return w;
}

std::vector<float> local_rope_inverse_frequencies(const ModelConfig& config) {
  ModelConfig local = config;
  local.rope_freq_base = config.rope_freq_base_local;
  local.rope_linear_factor = 1.0f;
  local.rope_llama3 = {};
  return rope_inverse_frequencies(local);
}

std::vector<float> rope_inverse_frequencies(const ModelConfig& c, std::vector<float> factors) {
  int half = c.rope_dim / 2;
  if (!factors.empty() && static_cast<int>(factors.size()) != half)
    fail("%zu rope frequency factors for %d pairs", factors.size(), half);
  const bool from_config = factors.empty();  // a rope_freqs tensor replaces Llama 3 scaling
  if (from_config) factors.assign(half, 1.0f);
  if (from_config && c.rope_llama3.enabled) {
    const auto& s = c.rope_llama3;
    double low_wavelen = s.original_context_length / s.low_freq_factor;
    double high_wavelen = s.original_context_length / s.high_freq_factor;
    for (int i = 0; i < half; ++i) {
      double freq = std::pow(static_cast<double>(c.rope_freq_base), -2.0 * i / c.rope_dim);
      double wavelen = 2.0 * M_PI / freq;
      if (wavelen < high_wavelen) {
        factors[i] = 1.0f;
      } else if (wavelen > low_wavelen) {
        factors[i] = s.factor;
      } else {
        double smooth = (s.original_context_length / wavelen - s.low_freq_factor) /
                        (s.high_freq_factor - s.low_freq_factor);
        factors[i] = static_cast<float>(1.0 / ((1.0 - smooth) / s.factor + smooth));
      }
    }
  }
  if (from_config && c.rope_yarn.enabled) {
    // ggml_rope_yarn_corr_dims in its float steps, then rope_yarn's ramp: pair i's angle is
    // theta * (ramp + (1 - ramp) / factor), a divisor of 1 / (that) on its frequency.
    const auto& y = c.rope_yarn;
    auto corr_dim = [&](float beta) {
      return static_cast<float>(c.rope_dim) * std::log(y.original_context_length / (beta * 2.0f * static_cast<float>(M_PI))) /
             (2.0f * std::log(c.rope_freq_base));
    };
    const float low = std::max(0.0f, std::floor(corr_dim(y.beta_fast)));
    const float high = std::min(static_cast<float>(c.rope_dim - 1), std::ceil(corr_dim(y.beta_slow)));
    const float freq_scale = 1.0f / y.factor;
    for (int i = 0; i < half; ++i) {
      const float ramp = 1.0f - std::min(1.0f, std::max(0.0f, (static_cast<float>(i) - low) / std::max(0.001f, high - low)));
      factors[i] = 1.0f / (freq_scale * (1.0f - ramp) + ramp);
    }
  }
  std::vector<float> inv(half);
  for (int i = 0; i < half; ++i) {
    if (!(factors[i] > 0.0f)) fail("rope frequency factor %d is not positive", i);
    double freq = std::pow(static_cast<double>(c.rope_freq_base), -2.0 * i / c.rope_dim);
    inv[i] = static_cast<float>(freq / factors[i] / c.rope_linear_factor);
  }
  return inv;
}

uint64_t ModelWeights::weight_bytes() const {
  auto bytes = [](const WeightMatrix& m) { return static_cast<uint64_t>(m.rows) * m.row_bytes; };
  uint64_t total = bytes(output);
  for (const auto& L : layers) {
    total += bytes(L.wq) + bytes(L.wk) + bytes(L.wv) + bytes(L.wo) + bytes(L.w_gate) + bytes(L.w_up) + bytes(L.w_down);
    if (!L.experts.empty()) {
      const ExpertWeights& e = L.experts.front();  // every expert of a layer has the same types and shapes
      total += bytes(L.router) + static_cast<uint64_t>(config.num_experts_used) * (bytes(e.gate) + bytes(e.up) + bytes(e.down));
    }
  }
  return total;
}

}  // namespace pagedchat
