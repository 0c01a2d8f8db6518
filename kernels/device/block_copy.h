#pragma once
// Batched copy-on-write inside the device pool: for every pair, all chunks (layer, K/V) of
// block src copied to block dst, in one launch per engine step. The pairs of one launch must not
// read a block another pair writes (the KV manager's transfer batches guarantee it).
// CPU reference: reference/block_copy_reference.h.

#include <cstdint>

#include <cuda_runtime.h>

#include "kernels/common/kv_pool_bytes.h"

namespace pagedchat::kernels {

// pairs: device memory, [num_pairs] BlockCopy. pool.block_bytes must be a multiple of 16 and
// pool.base 16-byte aligned. Throws Error on a bad pool or a launch failure.
void copy_blocks(const KvPoolBytes& pool, const BlockCopy* pairs, int32_t num_pairs, cudaStream_t stream);

}  // namespace pagedchat::kernels
