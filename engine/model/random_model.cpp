// Seeded random weights at a real model's shape (see random_model.h).
#include "engine/model/random_model.h"

#include <algorithm>
#include <cmath>

#include "engine/common/error.h"
#include "engine/common/float16.h"
#include "engine/common/thread_pool.h"
#include "engine/tokenizer/byte_tokenizer.h"

namespace pagedchat {
namespace {

// Tensor numbers in the hash: two model-wide matrices, then 16 per layer.
enum : uint64_t { kEmbedding = 0, kOutput = 1, kOutputNorm = 2, kFirstLayer = 16, kPerLayer = 16 };
enum : uint64_t { kQ, kK, kV, kO, kGate, kUp, kDown, kAttnNorm, kFfnNorm, kQNorm, kKNorm, kRouter };
// A mixture of experts' matrices take tensor numbers of their own past every layer's, and
// gpt-oss's vectors (biases, sinks) past those, 16 a layer.
constexpr uint64_t kFirstExpert = 1ull << 32;
constexpr uint64_t kFirstExtra = 1ull << 40;
enum : uint64_t { kBq, kBk, kBv, kBo, kSinks, kRouterBias, kGateBiases, kUpBiases, kDownBiases };

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

ModelConfig llama3(std::string name, int layers, int dim, int heads, int kv_heads, int ffn, float rope_factor) {
  ModelConfig c;
  c.architecture = "llama";
  c.name = std::move(name);
  c.num_layers = layers;
  c.dim = dim;
  c.num_heads = heads;
  c.num_kv_heads = kv_heads;
  c.head_dim = dim / heads;
  c.ffn_dim = ffn;
  c.vocab_size = 128256;
  c.context_length = 131072;
  c.rms_eps = 1e-5f;
  c.rope_freq_base = 500000.0f;
  c.rope_dim = c.head_dim;
  c.rope_llama3 = {true, rope_factor, 1.0f, 4.0f, 8192.0f};
  return c;
}

class Builder {
 public:
  Builder(ModelWeights& w, uint64_t seed, int num_threads) : w_(w), seed_(seed), pool_(num_threads) {}

  // A [rows, cols] BF16 matrix with std `stddev` (uniform: half-width sqrt(3) * std).
  WeightMatrix matrix(uint64_t tensor, int64_t rows, int64_t cols, double stddev) {
    const size_t bytes = static_cast<size_t>(rows) * static_cast<size_t>(cols) * 2;
    w_.owned_tensors.push_back(std::make_unique_for_overwrite<uint8_t[]>(bytes));
    auto* out = reinterpret_cast<uint16_t*>(w_.owned_tensors.back().get());
    const float half_width = static_cast<float>(std::sqrt(3.0) * stddev);
    const int64_t rows_per_task = std::max<int64_t>(1, (1 << 16) / cols);
    pool_.parallel_for((rows + rows_per_task - 1) / rows_per_task, [&](int64_t task) {
      const int64_t end = std::min(rows, (task + 1) * rows_per_task) * cols;
      for (int64_t i = task * rows_per_task * cols; i < end; ++i)
        out[i] = fp32_to_bf16(half_width * random_uniform(seed_, tensor, static_cast<uint64_t>(i)));
    });
    WeightMatrix m;
    m.type = GgmlType::BF16;
    m.data = w_.owned_tensors.back().get();
    m.rows = rows;
    m.cols = cols;
    m.row_bytes = static_cast<size_t>(cols) * 2;
    return m;
  }

  std::vector<float> norm(uint64_t tensor, int n) { return around(tensor, n, 1.0f, 0.1f); }
  // n values uniform in center +- half_width.
  std::vector<float> around(uint64_t tensor, int64_t n, float center, float half_width) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[i] = center + half_width * random_uniform(seed_, tensor, static_cast<uint64_t>(i));
    return v;
  }

 private:
  ModelWeights& w_;
  uint64_t seed_;
  ThreadPool pool_;
};

}  // namespace

float random_uniform(uint64_t seed, uint64_t tensor, uint64_t index) {
  const uint64_t h = splitmix64(splitmix64(seed ^ (tensor * 0xd1342543de82ef95ull)) + index);
  return static_cast<float>(h >> 40) * (2.0f / 16777216.0f) - 1.0f;  // 24 bits: exact in a float
}

std::vector<std::string> random_model_shapes() { return {"tiny", "tiny-moe", "tiny-oss", "llama-3.2-1b", "llama-3.1-8b"}; }

ModelConfig random_model_config(std::string_view shape) {
  if (shape == "llama-3.2-1b") return llama3("random llama-3.2-1b", 16, 2048, 32, 8, 8192, 32.0f);
  if (shape == "llama-3.1-8b") return llama3("random llama-3.1-8b", 32, 4096, 32, 8, 14336, 8.0f);
  if (shape == "tiny") {
    ModelConfig c = llama3("random tiny", 2, 256, 4, 2, 512, 8.0f);
    c.vocab_size = 512;
    c.context_length = 4096;
    c.rope_freq_base = 10000.0f;
    c.rope_llama3 = {};
    return c;
  }
  if (shape == "tiny-moe") {  // tiny's attention with QK-norm, and 8 experts of 128, 2 per token (qwen3moe)
    ModelConfig c = random_model_config("tiny");
    c.architecture = "qwen3moe";
    c.name = "random tiny-moe";
    c.qk_norm = true;
    c.rope_layout = RopeLayout::kNeox;
    c.num_experts = 8;
    c.num_experts_used = 2;
    c.expert_ffn_dim = 128;
    c.expert_weights_norm = true;
    return c;
  }
  if (shape == "tiny-oss") {  // tiny-moe's mixture with what gpt-oss adds, a window of 16 on every other layer
    ModelConfig c = random_model_config("tiny-moe");
    c.architecture = "gpt-oss";
    c.name = "random tiny-oss";
    c.qk_norm = false;
    c.qkv_bias = c.output_bias = c.attention_sinks = c.expert_biases = true;
    c.sliding_window = 16;
    c.sliding_window_pattern = 2;
    c.local_rope = false;
    c.ffn_activation = FfnActivation::kSwigluOai;
    c.expert_gating = ExpertGating::kSoftmaxOfTopK;
    c.expert_weights_norm = false;
    c.rope_yarn = {true, 4.0f, 512.0f, 32.0f, 1.0f};
    c.rope_attn_factor = 1.0f + 0.1f * std::log(4.0f);
    return c;
  }
  fail("unknown random-weight shape '%.*s' (tiny, tiny-moe, tiny-oss, llama-3.2-1b, llama-3.1-8b)", static_cast<int>(shape.size()), shape.data());
}

std::unique_ptr<Model> make_random_model(std::string_view shape, uint64_t seed, int num_threads) {
  auto m = std::make_unique<Model>();
  ModelWeights& w = m->weights;
  w.config = random_model_config(shape);
  const ModelConfig& c = w.config;
  Builder b(w, seed, num_threads);
  w.token_embedding = b.matrix(kEmbedding, c.vocab_size, c.dim, 1.0);
  w.tied_embeddings = shape == "llama-3.2-1b";
  // Untied: std 2/sqrt(dim) gives logits of std ~2, peaked enough that top-1 is rarely a tie.
  w.output = w.tied_embeddings ? w.token_embedding : b.matrix(kOutput, c.vocab_size, c.dim, 2.0 / std::sqrt(c.dim));
  w.output_norm = b.norm(kOutputNorm, c.dim);
  w.layers.resize(c.num_layers);
  for (int l = 0; l < c.num_layers; ++l) {
    const uint64_t t = kFirstLayer + kPerLayer * static_cast<uint64_t>(l);
    const double in_dim = 1.0 / std::sqrt(c.dim), in_q = 1.0 / std::sqrt(c.q_dim()), in_ffn = 1.0 / std::sqrt(c.ffn_dim);
    LayerWeights& L = w.layers[l];
    L.attn_norm = b.norm(t + kAttnNorm, c.dim);
    L.wq = b.matrix(t + kQ, c.q_dim(), c.dim, in_dim);
    L.wk = b.matrix(t + kK, c.kv_dim(), c.dim, in_dim);
    L.wv = b.matrix(t + kV, c.kv_dim(), c.dim, in_dim);
    L.wo = b.matrix(t + kO, c.dim, c.q_dim(), in_q);
    L.ffn_norm = b.norm(t + kFfnNorm, c.dim);
    if (c.qk_norm) {
      L.q_norm = b.norm(t + kQNorm, c.head_dim);
      L.k_norm = b.norm(t + kKNorm, c.head_dim);
    }
    const uint64_t x = kFirstExtra + 16 * static_cast<uint64_t>(l);
    if (c.qkv_bias) {
      L.bq = b.around(x + kBq, c.q_dim(), 0.0f, 0.5f);
      L.bk = b.around(x + kBk, c.kv_dim(), 0.0f, 0.5f);
      L.bv = b.around(x + kBv, c.kv_dim(), 0.0f, 0.5f);
    }
    if (c.output_bias) L.bo = b.around(x + kBo, c.dim, 0.0f, 0.5f);
    if (c.attention_sinks) L.attn_sinks = b.around(x + kSinks, c.num_heads, 0.0f, 3.0f);
    if (c.expert_biases) {
      L.router_bias = b.around(x + kRouterBias, c.num_experts, 0.0f, 1.0f);
      L.expert_gate_bias = b.around(x + kGateBiases, int64_t{c.num_experts} * c.expert_ffn_dim, 0.0f, 1.0f);
      L.expert_up_bias = b.around(x + kUpBiases, int64_t{c.num_experts} * c.expert_ffn_dim, 0.0f, 1.0f);
      L.expert_down_bias = b.around(x + kDownBiases, int64_t{c.num_experts} * c.dim, 0.0f, 0.5f);
    }
    if (c.is_moe()) {
      // The router at 4x the usual spread, so that a token's choice of experts is clear-cut.
      L.router = b.matrix(t + kRouter, c.num_experts, c.dim, 4.0 * in_dim);
      const double in_expert = 1.0 / std::sqrt(c.expert_ffn_dim);
      for (int e = 0; e < c.num_experts; ++e) {
        const uint64_t x = kFirstExpert + 4 * (static_cast<uint64_t>(l) * c.num_experts + e);
        L.experts.push_back({b.matrix(x, c.expert_ffn_dim, c.dim, in_dim), b.matrix(x + 1, c.expert_ffn_dim, c.dim, in_dim),
                             b.matrix(x + 2, c.dim, c.expert_ffn_dim, in_expert)});
      }
      continue;
    }
    L.w_gate = b.matrix(t + kGate, c.ffn_dim, c.dim, in_dim);
    L.w_up = b.matrix(t + kUp, c.ffn_dim, c.dim, in_dim);
    L.w_down = b.matrix(t + kDown, c.dim, c.ffn_dim, in_ffn);
  }
  w.rope_inv_freq = rope_inverse_frequencies(c);
  m->tokenizer = std::make_unique<ByteTokenizer>(c.vocab_size);
  return m;
}

}  // namespace pagedchat
