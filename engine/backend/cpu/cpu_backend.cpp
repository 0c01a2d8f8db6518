// The CPU forward pass: embedding, then per layer attention and gated feed-forward blocks
// (Llama's, with what Qwen 3 and Gemma 3 add), then logits.
#include "engine/backend/cpu/cpu_backend.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "engine/backend/cpu/attention/paged_attention.h"
#include "engine/backend/cpu/rope.h"
#include "engine/backend/cpu/vector_ops.h"
#include "engine/common/error.h"
#include "engine/kv/block_hash.h"
#include "engine/quant/quant.h"

namespace pagedchat {

CpuBackend::CpuBackend(const ModelWeights& weights, int num_threads, KvType kv_type, cpu::MatmulPrecision precision,
                       const LoadProgress& progress)
    : w_(weights), pool_(num_threads), kv_type_(kv_type), precision_(precision), rope_inv_freq_(&weights.rope_inv_freq) {
  const int hd = weights.config.head_dim;
  if (hd > cpu::kMaxHeadDim) fail("the CPU attention takes head sizes up to %d (this model's is %d)", cpu::kMaxHeadDim, hd);
  if (!kv_type_fits(kv_type, hd))
    fail("KV type %s needs a head size that is a multiple of 32 (this model's is %d)", kv_type_name(kv_type), hd);
  if (precision_ == cpu::MatmulPrecision::kQuantizedActivations) packed_ = cpu::PackedWeights(weights, pool_, progress);
}

void CpuBackend::allocate_kv(const KvCacheShape& shape) {
  const ModelConfig& c = w_.config;
  if (shape.num_layers != c.num_layers || shape.num_kv_heads != c.num_kv_heads || shape.head_dim != c.head_dim)
    fail("KV shape does not match the model");
  kv_.allocate(shape, kv_type_);
  rope_inv_freq_ = &w_.rope_inv_freq_for(shape.max_context > 0 ? shape.max_context : c.context_length);
}

uint64_t CpuBackend::kv_block_bytes(int32_t block_size) const {
  const ModelConfig& c = w_.config;
  return static_cast<uint64_t>(block_size) * kv_token_bytes(kv_type_, c.num_layers, c.num_kv_heads, c.head_dim);
}

void CpuBackend::copy_blocks(std::span<const BlockCopy> copies) {
  for (const BlockCopy& c : copies) kv_.copy_block_from(kv_, c.src, c.dst);
}

void CpuBackend::allocate_host_kv(int num_blocks) {
  KvCacheShape shape = kv_.shape();
  shape.num_blocks = num_blocks;
  host_kv_.allocate(shape, kv_type_);
}


void CpuBackend::swap_out(std::span<const BlockCopy> pairs) {
  for (const BlockCopy& c : pairs) host_kv_.copy_block_from(kv_, c.src, c.dst);
}

void CpuBackend::swap_in(std::span<const BlockCopy> pairs) {
  for (const BlockCopy& c : pairs) kv_.copy_block_from(host_kv_, c.src, c.dst);
}

// What a block's bytes on disk must match: the pool's layout (kv_pool.h, "HND") and element type,
// the matmul precision (the K/V's rounding follows it), and the rotary frequencies the pool was
// allocated for (LongRoPE picks its long factors by the context: another context, other K).
std::string CpuBackend::kv_layout() const {
  uint64_t rope = 0x726f7065ull;
  for (const std::vector<float>* freqs : {rope_inv_freq_, &w_.rope_inv_freq_local})
    for (float f : *freqs) {
      uint32_t bits;
      std::memcpy(&bits, &f, sizeof bits);
      rope = mix64(rope ^ bits);
    }
  char tail[64];
  std::snprintf(tail, sizeof tail, "-p%d-rope%016llx", static_cast<int>(precision_), static_cast<unsigned long long>(rope));
  return std::string("cpu-hnd-") + kv_type_name(kv_type_) + tail;
}

void CpuBackend::read_block(int32_t block, std::span<uint8_t> out) const {
  if (out.size() != kv_.block_bytes()) fail("a KV block is %llu bytes, not %zu", static_cast<unsigned long long>(kv_.block_bytes()), out.size());
  kv_.read_block(block, out.data());
}

void CpuBackend::write_block(int32_t block, std::span<const uint8_t> bytes) {
  if (bytes.size() != kv_.block_bytes()) fail("a KV block is %llu bytes, not %zu", static_cast<unsigned long long>(kv_.block_bytes()), bytes.size());
  kv_.write_block(block, bytes.data());
}

void CpuBackend::forward(const ForwardBatch& batch, std::vector<float>& logits) {
  const ModelConfig& c = w_.config;
  const int64_t n = batch.num_tokens();
  x_.resize(n * c.dim);
  xn_.resize(n * c.dim);
  q_.resize(n * c.q_dim());
  k_.resize(n * c.kv_dim());
  v_.resize(n * c.kv_dim());
  attn_.resize(n * c.q_dim());
  proj_.resize(n * c.dim);
  // A mixture of experts has no dense feed-forward block: its feed_forward_length is unused.
  const int64_t ffn_width = c.is_moe() ? c.expert_ffn_dim : c.ffn_dim;
  gate_.resize(n * ffn_width);
  up_.resize(n * ffn_width);

  // Embedding lookup.
  const WeightMatrix& e = w_.token_embedding;
  const cpu::PackedMatrix* own = packed_.find(e);  // the backend's copy of its rows, once loaded
  const uint8_t* embedding = own ? own->bytes.data() : e.data;
  pool_.parallel_for(n, [&](int64_t t) {
    float* x = x_.data() + t * c.dim;
    dequantize_row(e.type, embedding + static_cast<size_t>(batch.token_ids[t]) * e.row_bytes, x, c.dim);
    if (c.embedding_scale != 1.0f)
      for (int i = 0; i < c.dim; ++i) x[i] *= c.embedding_scale;
  });

  // Rotary angles depend on the position only: once per token, not once per layer.
  if (rope_.size() < static_cast<size_t>(n)) rope_.resize(n);
  const double mscale = w_.config.rope_attn_factor;
  pool_.parallel_for(n, [&](int64_t t) { rope_[t].compute(batch.positions[t], *rope_inv_freq_, mscale); });
  if (c.sliding_window > 0 && c.local_rope) {
    if (rope_local_.size() < static_cast<size_t>(n)) rope_local_.resize(n);
    pool_.parallel_for(n, [&](int64_t t) { rope_local_[t].compute(batch.positions[t], w_.rope_inv_freq_local); });
  }

  experts_run_ = 0;
  for (int l = 0; l < c.num_layers; ++l) {
    attention_block(batch, l);
    if (c.is_moe()) moe_block(l, n);
    else ffn_block(l, n);
  }

  // Final norm and the output projection, only for the rows whose logits are wanted.
  const int64_t num_logits = static_cast<int64_t>(batch.logits_indices.size());
  for (int64_t i = 0; i < num_logits; ++i)
    cpu::rms_norm(x_.data() + static_cast<int64_t>(batch.logits_indices[i]) * c.dim, w_.output_norm.data(),
                  xn_.data() + i * c.dim, c.dim, c.rms_eps);
  logits.resize(static_cast<size_t>(num_logits) * c.vocab_size);
  act_.prepare(xn_.data(), num_logits, c.dim);
  cpu::matmul({{&w_.output, logits.data(), c.vocab_size, packed_.find(w_.output)}}, act_, num_logits, pool_, precision_);
  if (c.logit_scale != 1.0f) {
    const float inverse = 1.0f / c.logit_scale;  // llama.cpp multiplies by the float reciprocal
    for (float& l : logits) l *= inverse;
  }
}

void CpuBackend::attention_block(const ForwardBatch& batch, int l) {
  const ModelConfig& c = w_.config;
  const LayerWeights& L = w_.layers[l];
  const int64_t n = batch.num_tokens();

  pool_.parallel_for(n, [&](int64_t t) {
    cpu::rms_norm(x_.data() + t * c.dim, L.attn_norm.data(), xn_.data() + t * c.dim, c.dim, c.rms_eps);
  });
  act_.prepare(xn_.data(), n, c.dim);
  cpu::matmul({{&L.wq, q_.data(), c.q_dim(), packed_.find(L.wq)},
               {&L.wk, k_.data(), c.kv_dim(), packed_.find(L.wk)},
               {&L.wv, v_.data(), c.kv_dim(), packed_.find(L.wv)}},
              act_, n, pool_, precision_);

  // Bias, QK-norm, rotary embedding, and the new K/V into their slots.
  const std::vector<cpu::RopeAngles>& rope = c.uses_local_rope(l) ? rope_local_ : rope_;
  pool_.parallel_for(n, [&](int64_t t) {
    float* q = q_.data() + t * c.q_dim();
    float* k = k_.data() + t * c.kv_dim();
    float* v = v_.data() + t * c.kv_dim();
    if (c.qkv_bias) {
      cpu::add_inplace(q, L.bq.data(), c.q_dim());
      cpu::add_inplace(k, L.bk.data(), c.kv_dim());
      cpu::add_inplace(v, L.bv.data(), c.kv_dim());
    }
    if (c.qk_norm) {
      for (int h = 0; h < c.num_heads; ++h) cpu::rms_norm(q + h * c.head_dim, L.q_norm.data(), q + h * c.head_dim, c.head_dim, c.rms_eps);
      for (int h = 0; h < c.num_kv_heads; ++h) cpu::rms_norm(k + h * c.head_dim, L.k_norm.data(), k + h * c.head_dim, c.head_dim, c.rms_eps);
    }
    if (c.rotates(l)) {
      cpu::apply_rope(q, c.num_heads, c.head_dim, c.rope_dim, c.rope_layout, rope[t]);
      cpu::apply_rope(k, c.num_kv_heads, c.head_dim, c.rope_dim, c.rope_layout, rope[t]);
    }
    int64_t slot = batch.slot_mapping[t];
    for (int h = 0; h < c.num_kv_heads; ++h) kv_.store(l, slot, h, k + h * c.head_dim, v + h * c.head_dim);
  });

  cpu::paged_attention(batch, kv_, l,
                       {c.num_heads, c.num_kv_heads, c.head_dim, c.query_scale(), c.window_of(l),
                        L.attn_sinks.empty() ? nullptr : L.attn_sinks.data()},
                       q_.data(), attn_.data(), pool_);

  act_.prepare(attn_.data(), n, c.q_dim());
  cpu::matmul({{&L.wo, proj_.data(), c.dim, packed_.find(L.wo)}}, act_, n, pool_, precision_);
  if (!L.bo.empty())
    pool_.parallel_for(n, [&](int64_t t) { cpu::add_inplace(proj_.data() + t * c.dim, L.bo.data(), c.dim); });
  add_residual(L.post_attn_norm, n);
}

// x += the block's output (in proj_), normalized first by `post_norm` when the model has one.
void CpuBackend::add_residual(const std::vector<float>& post_norm, int64_t n) {
  const ModelConfig& c = w_.config;
  if (!post_norm.empty())
    pool_.parallel_for(n, [&](int64_t t) {
      float* p = proj_.data() + t * c.dim;
      cpu::rms_norm(p, post_norm.data(), p, c.dim, c.rms_eps);
    });
  if (c.residual_scale != 1.0f)
    for (int64_t i = 0; i < n * c.dim; ++i) proj_[i] *= c.residual_scale;
  cpu::add_inplace(x_.data(), proj_.data(), n * c.dim);
}

void CpuBackend::ffn_block(int l, int64_t n) {
  const ModelConfig& c = w_.config;
  const LayerWeights& L = w_.layers[l];
  pool_.parallel_for(n, [&](int64_t t) {
    cpu::rms_norm(x_.data() + t * c.dim, L.ffn_norm.data(), xn_.data() + t * c.dim, c.dim, c.rms_eps);
  });
  act_.prepare(xn_.data(), n, c.dim);
  cpu::matmul({{&L.w_gate, gate_.data(), c.ffn_dim, packed_.find(L.w_gate)},
               {&L.w_up, up_.data(), c.ffn_dim, packed_.find(L.w_up)}}, act_, n, pool_, precision_);
  pool_.parallel_for(n, [&](int64_t t) {
    float* gate = gate_.data() + t * c.ffn_dim;
    const float* up = up_.data() + t * c.ffn_dim;
    if (c.ffn_activation == FfnActivation::kGeluTanh) cpu::geglu(gate, up, c.ffn_dim);
    else cpu::swiglu(gate, up, c.ffn_dim);
  });
  act_.prepare(gate_.data(), n, c.ffn_dim);
  cpu::matmul({{&L.w_down, proj_.data(), c.dim, packed_.find(L.w_down)}}, act_, n, pool_, precision_);
  add_residual(L.post_ffn_norm, n);
}

}  // namespace pagedchat
