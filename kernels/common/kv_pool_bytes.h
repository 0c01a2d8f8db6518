#pragma once
// The whole KV pool as blocks of bytes, for the operations that move whole blocks (copy-on-write
// copies, swap to and from pinned host memory): block b's bytes are num_chunks runs of
// block_bytes, one per (layer, K or V), chunk_stride apart. PC_HOST_DEVICE arithmetic, plus the
// host-side plan that merges consecutive block pairs into runs so a swap is few copies. Only a view
// of the bytes: which block is free or shared is the KV manager's (engine/kv/block_pool.h).

#include <cstdint>
#include <vector>

#include "engine/backend/kv_cache_shape.h"  // BlockCopy
#include "engine/common/float16.h"          // PC_HOST_DEVICE

namespace pagedchat::kernels {

struct KvPoolBytes {
  uint8_t* base = nullptr;   // [num_chunks, num_blocks, block_bytes] with chunk_stride between chunks
  int64_t block_bytes = 0;   // one block of one chunk: block_size * num_kv_heads * head_dim * elem
  int64_t chunk_stride = 0;  // >= num_blocks * block_bytes
  int32_t num_chunks = 0;    // num_layers * 2 (K, V)
  int32_t num_blocks = 0;

  PC_HOST_DEVICE uint8_t* block(int32_t chunk, int32_t b) const { return base + chunk * chunk_stride + b * block_bytes; }
};

// A contiguous pool of num_layers * 2 chunks, as the CUDA backend allocates it (and its pinned
// host mirror, with its own num_blocks).
inline KvPoolBytes packed_kv_pool_bytes(uint8_t* base, int32_t num_layers, int32_t num_blocks, int64_t block_bytes) {
  return KvPoolBytes{base, block_bytes, num_blocks * block_bytes, 2 * num_layers, num_blocks};
}

// count consecutive blocks src.. -> dst.. (both ascending by one).
struct BlockRun {
  int32_t src = 0;
  int32_t dst = 0;
  int32_t count = 0;
};

// Merges pairs that continue the previous run on both sides; order is kept, so the runs copy
// exactly what the pairs copy (the KV manager's batches never read a block they write).
inline std::vector<BlockRun> plan_block_runs(const BlockCopy* pairs, size_t num_pairs) {
  std::vector<BlockRun> runs;
  for (size_t i = 0; i < num_pairs; ++i) {
    const BlockCopy& p = pairs[i];
    if (!runs.empty() && runs.back().src + runs.back().count == p.src && runs.back().dst + runs.back().count == p.dst)
      ++runs.back().count;
    else
      runs.push_back({p.src, p.dst, 1});
  }
  return runs;
}

}  // namespace pagedchat::kernels
