// Paged causal attention on the CPU: one task per (token, query head), two-pass softmax.
#include "engine/backend/cpu/cpu_attention.h"

#include <cmath>
#include <vector>

#include "engine/backend/cpu/vector_ops.h"

namespace pagedchat::cpu {

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

  pool.parallel_for(static_cast<int64_t>(num_tokens) * shape.num_heads, [&](int64_t task) {
    const int t = static_cast<int>(task / shape.num_heads);
    const int h = static_cast<int>(task % shape.num_heads);
    const int kvh = h / group;
    const int32_t* table = batch.block_table(seq_of[t]);
    const int ctx = batch.positions[t] + 1;
    const float* qh = q + (static_cast<size_t>(t) * shape.num_heads + h) * hd;
    float* oh = out + (static_cast<size_t>(t) * shape.num_heads + h) * hd;

    thread_local std::vector<float> scores;
    scores.resize(ctx);
    float max_score = -INFINITY;
    for (int j = 0; j < ctx; ++j) {
      int64_t slot = static_cast<int64_t>(table[j / block_size]) * block_size + j % block_size;
      float s = dot_f32(qh, kv.key(layer, slot, kvh), hd) * scale;
      scores[j] = s;
      max_score = std::max(max_score, s);
    }
    float sum = 0.0f;
    for (int j = 0; j < ctx; ++j) {
      scores[j] = std::exp(scores[j] - max_score);
      sum += scores[j];
    }
    const float inv_sum = 1.0f / sum;
    for (int d = 0; d < hd; ++d) oh[d] = 0.0f;
    for (int j = 0; j < ctx; ++j) {
      int64_t slot = static_cast<int64_t>(table[j / block_size]) * block_size + j % block_size;
      axpy_f32(scores[j] * inv_sum, kv.value(layer, slot, kvh), oh, hd);
    }
  });
}

}  // namespace pagedchat::cpu
