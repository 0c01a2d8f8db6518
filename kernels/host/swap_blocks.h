#pragma once
// Swap: whole blocks between the device pool and a pinned host pool of the same block shape,
// as async copies on a stream (the engine's preemption by swap). Host code only: no kernel, the
// copy engines do it. Consecutive pairs become one copy each (plan_block_runs), and each copy
// moves every chunk (layer, K/V) at once as a 2-D copy.

#include <span>

#include <cuda_runtime.h>

#include "kernels/common/kv_pool_bytes.h"

namespace pagedchat::kernels {

// from -> to for each pair (src in `from`, dst in `to`); one pool on the device, the other in
// pinned host memory (cudaHostAlloc), or both on the device. Returns before the copies finish;
// synchronize the stream before reading `to` on the host or reusing `from`'s blocks.
// Throws Error for pools of different block shapes, a block id out of range, or a CUDA failure.
void swap_blocks(const KvPoolBytes& from, const KvPoolBytes& to, std::span<const BlockCopy> pairs, cudaStream_t stream);

}  // namespace pagedchat::kernels
