#pragma once
// How decode attention cuts its work (host-only arithmetic, tested on the CPU): how many query
// heads one CTA serves (the GQA tile: K/V of a kv head is read once for all of them), and how
// many splits of the context each (sequence, kv head) gets so that a small batch still fills
// the GPU, with the split-K workspace that the reduce step reads.

#include <algorithm>
#include <cstdint>

namespace pagedchat::kernels {

// Head dims the decode and prefill kernels are compiled for: 64 and 128 (most models; SmolLM2),
// 256 (Gemma 3). A head row must be a whole number of 16-byte loads of 16-bit elements.
inline bool attention_head_dim_supported(int head_dim) { return head_dim == 64 || head_dim == 128 || head_dim == 256; }

struct DecodePlan {
  int32_t head_tile = 1;        // query heads per CTA: 1, 2, 4 or 8 (>= group, or 8)
  int32_t head_tiles = 1;       // CTAs per kv head: ceil(group / head_tile)
  int32_t partition_size = 0;   // context tokens per split, a multiple of 32
  int32_t num_splits = 1;       // splits of the longest sequence; 1 means no reduce step
  int64_t workspace_bytes = 0;  // split-K partials: [num_seqs, num_heads, num_splits] x (m, l, head_dim acc)
};

inline constexpr int kDecodeMinPartition = 256;  // below this a split's fixed cost dominates

// num_sms: the device's multiprocessors; the plan aims at about 4 CTAs of work per SM.
inline DecodePlan plan_decode(int num_seqs, int num_heads, int num_kv_heads, int head_dim, int max_seq_len, int num_sms) {
  DecodePlan p;
  const int group = num_heads / num_kv_heads;
  p.head_tile = group <= 1 ? 1 : group <= 2 ? 2 : group <= 4 ? 4 : 8;
  p.head_tiles = (group + p.head_tile - 1) / p.head_tile;
  const int64_t ctas = static_cast<int64_t>(num_seqs) * num_kv_heads * p.head_tiles;
  const int64_t target = 4ll * std::max(num_sms, 1);
  const int64_t max_len = std::max(max_seq_len, 1);
  const int64_t most_splits = (max_len + kDecodeMinPartition - 1) / kDecodeMinPartition;
  const int64_t want = std::clamp<int64_t>((target + ctas - 1) / ctas, 1, most_splits);
  p.partition_size = static_cast<int32_t>(((max_len + want - 1) / want + 31) / 32 * 32);
  p.num_splits = static_cast<int32_t>((max_len + p.partition_size - 1) / p.partition_size);
  if (p.num_splits > 1)
    p.workspace_bytes = static_cast<int64_t>(num_seqs) * num_heads * p.num_splits * (2 + head_dim) * 4;
  return p;
}

}  // namespace pagedchat::kernels
