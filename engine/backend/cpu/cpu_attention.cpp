// Paged causal attention on the CPU: one task per (token, KV head), two-pass softmax.
#include "engine/backend/cpu/cpu_attention.h"

#include <cmath>
#include <vector>

#include "engine/backend/cpu/vector_ops.h"

namespace pagedchat::cpu {
namespace {

// out[d] = sum over j of weight[j] * value_j[d], accumulated j by j with one fma per element
// (the bits of calling axpy_f32 once per j), but held in registers for 64 elements at a time
// instead of loaded and stored for every j.
template <typename ValueRow>
void weighted_sum(const float* weight, int ctx, const ValueRow& value_row, float* out, int hd) {
  int d0 = 0;
#ifdef PC_VEC_AVX2
  constexpr int kChunk = 64;
  for (; d0 + kChunk <= hd; d0 += kChunk) {
    __m256 acc[kChunk / 8];
    for (__m256& a : acc) a = _mm256_setzero_ps();
    for (int j = 0; j < ctx; ++j) {
      const __m256 w = _mm256_set1_ps(weight[j]);
      const float* v = value_row(j) + d0;
#pragma GCC unroll 8
      for (int i = 0; i < kChunk / 8; ++i) acc[i] = _mm256_fmadd_ps(w, _mm256_loadu_ps(v + 8 * i), acc[i]);
    }
    for (int i = 0; i < kChunk / 8; ++i) _mm256_storeu_ps(out + d0 + 8 * i, acc[i]);
  }
#endif
  if (d0 < hd) {
    for (int d = d0; d < hd; ++d) out[d] = 0.0f;
    for (int j = 0; j < ctx; ++j) axpy_f32(weight[j], value_row(j) + d0, out + d0, hd - d0);
  }
}

}  // namespace

void paged_attention(const ForwardBatch& batch, const KvPool& kv, int layer, const AttentionShape& shape,
                     const float* q, float* out, ThreadPool& pool) {
  const int num_tokens = batch.num_tokens();
  const int hd = shape.head_dim;
  const int group = shape.num_heads / shape.num_kv_heads;
  const int block_size = kv.shape().block_size;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));

  // Which sequence each token belongs to.
  std::vector<int32_t> seq_of(num_tokens);
  for (int s = 0; s < batch.num_seqs(); ++s)
    for (int t = batch.cu_seqlens_q[s]; t < batch.cu_seqlens_q[s + 1]; ++t) seq_of[t] = s;

  // One task per (token, KV head): the query heads sharing that KV head read each key and
  // value row once between them. Each head's arithmetic is the same as on its own.
  pool.parallel_for(static_cast<int64_t>(num_tokens) * shape.num_kv_heads, [&](int64_t task) {
    const int t = static_cast<int>(task / shape.num_kv_heads);
    const int kvh = static_cast<int>(task % shape.num_kv_heads);
    const int32_t* table = batch.block_table(seq_of[t]);
    const int ctx = batch.positions[t] + 1;
    const float* q0 = q + (static_cast<size_t>(t) * shape.num_heads + static_cast<size_t>(kvh) * group) * hd;
    float* o0 = out + (static_cast<size_t>(t) * shape.num_heads + static_cast<size_t>(kvh) * group) * hd;

    thread_local std::vector<float> scores;  // [group, ctx]
    thread_local std::vector<float> max_score;
    scores.resize(static_cast<size_t>(group) * ctx);
    max_score.assign(group, -INFINITY);
    for (int j = 0; j < ctx; ++j) {
      const int64_t slot = static_cast<int64_t>(table[j / block_size]) * block_size + j % block_size;
      const float* key = kv.key(layer, slot, kvh);
      for (int g = 0; g < group; ++g) {
        const float s = dot_f32(q0 + g * hd, key, hd) * scale;
        scores[static_cast<size_t>(g) * ctx + j] = s;
        max_score[g] = std::max(max_score[g], s);
      }
    }
    for (int g = 0; g < group; ++g) {
      float* sg = scores.data() + static_cast<size_t>(g) * ctx;
      for (int j = 0; j < ctx; ++j) sg[j] -= max_score[g];
      exp_inplace(sg, ctx);
      float sum = 0.0f;
      for (int j = 0; j < ctx; ++j) sum += sg[j];
      const float inv = 1.0f / sum;
      for (int j = 0; j < ctx; ++j) sg[j] *= inv;
    }
    auto value_row = [&](int j) {
      const int64_t slot = static_cast<int64_t>(table[j / block_size]) * block_size + j % block_size;
      return kv.value(layer, slot, kvh);
    };
    for (int g = 0; g < group; ++g) weighted_sum(scores.data() + static_cast<size_t>(g) * ctx, ctx, value_row, o0 + g * hd, hd);
  });
}

}  // namespace pagedchat::cpu
