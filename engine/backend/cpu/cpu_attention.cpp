// Paged causal attention on the CPU: one task per (token, KV head), two-pass softmax.
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
    thread_local std::vector<float> max_score, inv_sum;
    scores.resize(static_cast<size_t>(group) * ctx);
    max_score.assign(group, -INFINITY);
    inv_sum.assign(group, 0.0f);
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
      float sum = 0.0f;
      for (int j = 0; j < ctx; ++j) {
        sg[j] = std::exp(sg[j] - max_score[g]);
        sum += sg[j];
      }
      inv_sum[g] = 1.0f / sum;
      for (int d = 0; d < hd; ++d) o0[g * hd + d] = 0.0f;
    }
    for (int j = 0; j < ctx; ++j) {
      const int64_t slot = static_cast<int64_t>(table[j / block_size]) * block_size + j % block_size;
      const float* value = kv.value(layer, slot, kvh);
      for (int g = 0; g < group; ++g) {
        axpy_f32(scores[static_cast<size_t>(g) * ctx + j] * inv_sum[g], value, o0 + g * hd, hd);
      }
    }
  });
}

}  // namespace pagedchat::cpu
