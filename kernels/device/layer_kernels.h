#pragma once
// The fused element-wise kernels of the CUDA backend's Llama forward pass, around the cuBLAS
// linear layers and the paged attention kernels. Their math is kernels/common/layer_math.h (checked on
// the CPU against CpuBackend); the residual stream and the projections' outputs are f32, what
// goes into a GEMM is 16-bit (`dtype`: f16 or bf16). All pointers are device memory; every
// launcher throws Error on a launch failure.

#include <cstdint>

#include <cuda_runtime.h>

#include "kernels/common/kv_dtype.h"

namespace pagedchat::kernels {

// x[t] = embedding[token_ids[t]] as f32. embedding: [vocab, dim] 16-bit; x: [num_tokens, dim].
void embedding_lookup(const uint16_t* embedding, KvDtype dtype, const int32_t* token_ids, int32_t num_tokens,
                      int32_t dim, float* x, cudaStream_t stream);

// Residual add, then RMSNorm: for each output row i, with r = rows ? rows[i] : i:
//   h = x[r] + (add ? add[r] : 0); out[i] = h * rms_scale(h) * weight  (16-bit)
// and x[r] = h when rows is null (the residual stream moves on); with rows (the final norm of
// the rows whose logits are wanted) x is left as it is.
// x, add: [*, dim] f32; weight: [dim] f32; out: [num_rows, dim] 16-bit.
void add_rms_norm(float* x, const float* add, const float* weight, const int32_t* rows, int32_t num_rows, int32_t dim,
                  float eps, uint16_t* out, KvDtype dtype, cudaStream_t stream);

// cos/sin of positions[t] * inv_freq[i]: cos_sin [num_tokens, half, 2] f32.
void rope_table(const int32_t* positions, int32_t num_tokens, const float* inv_freq, int32_t half, float* cos_sin,
                cudaStream_t stream);

struct QkvShape {
  int32_t num_heads, num_kv_heads, head_dim, rope_dim;
  bool neox;  // RopeLayout::kNeox
};

// The fused QKV projection's output split into q, k, v, with the bias added (bias may be null)
// and RoPE applied to q and k (the first rope_dim dims of each head).
// qkv: [num_tokens, (num_heads + 2 num_kv_heads) * head_dim] f32, rows q | k | v;
// bias: [same width] f32; q: [num_tokens, num_heads * head_dim]; k, v: [num_tokens, num_kv_heads * head_dim].
void split_qkv_rope(const float* qkv, const float* bias, const float* cos_sin, int32_t num_tokens, const QkvShape& s,
                    float* q, float* k, float* v, cudaStream_t stream);

// out[t, j] = silu(gu[t, j]) * gu[t, ffn + j] (16-bit). gu: [num_tokens, 2 ffn] f32 (gate | up).
void swiglu(const float* gu, int32_t num_tokens, int32_t ffn, uint16_t* out, KvDtype dtype, cudaStream_t stream);

// out = x rounded to 16 bits (the attention output, into the output projection). n elements.
void to_16bit(const float* x, int64_t n, uint16_t* out, KvDtype dtype, cudaStream_t stream);

}  // namespace pagedchat::kernels
