#pragma once
// Causal attention over the paged KV pool on the CPU: each token of the batch attends to
// positions [0, its position] of its own sequence (with a sliding window W: the last W of them,
// (position - W, position]), read through the block table, in one pass (online softmax) over
// tiles of kTileKeys keys. Keys before a window's start inside a tile score as masked (their
// probability is exactly 0, so they add nothing); tiles and partitions wholly before it are
// not read at all.
//
// The keys of a query are cut into partitions of kPartitionKeys by position; a query's result
// is the left fold of its partitions' softmax states, merged in position order. Work is split
// over threads by (sequence, KV head, tile of query tokens) and, where that leaves threads idle
// (decode of a few long chats), by ranges of partitions whose states are merged afterwards; a
// prefill tile reads each key tile once for all its query rows. Either way each query's
// arithmetic is the same, so its output depends on nothing but its own sequence: not on the
// batch around it, the thread count, the tiling, nor the kernel (see attention_kernel.h).

#include <cstdint>

#include "engine/backend/cpu/attention/attention_kernel.h"
#include "engine/backend/cpu/kv_pool.h"
#include "engine/backend/forward_batch.h"
#include "engine/common/thread_pool.h"

namespace pagedchat::cpu {

inline constexpr int kPartitionKeys = 256;

struct AttentionShape {
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  float scale = 0.0f;  // of q.k; 0: 1/sqrt(head_dim)
  int window = 0;      // a token sees its last `window` positions (0: all)
  // Attention sinks (gpt-oss): per query head a logit that joins the softmax's sum and adds no
  // value (ggml's soft_max with sinks); null: none.
  const float* sinks = nullptr;
};

// q: [num_tokens, num_heads * head_dim]; out: same shape.
void paged_attention(const ForwardBatch& batch, const KvPool& kv, int layer, const AttentionShape& shape,
                     const float* q, float* out, ThreadPool& pool,
                     const AttentionKernel& kernel = default_attention_kernel());

}  // namespace pagedchat::cpu
