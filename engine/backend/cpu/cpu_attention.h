#pragma once
// Causal attention over the paged KV pool on the CPU: each token of the batch attends to
// positions [0, its position] of its own sequence, read through the block table.

#include <cstdint>

#include "engine/backend/cpu/kv_pool.h"
#include "engine/backend/forward_batch.h"
#include "engine/common/thread_pool.h"

namespace pagedchat::cpu {

struct AttentionShape {
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
};

// q: [num_tokens, num_heads * head_dim]; out: same shape.
void paged_attention(const ForwardBatch& batch, const KvPool& kv, int layer, const AttentionShape& shape,
                     const float* q, float* out, ThreadPool& pool);

}  // namespace pagedchat::cpu
