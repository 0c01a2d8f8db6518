// Block copy: one CTA per (pair, chunk), 16-byte loads and stores; a block chunk is 2-64 KiB,
// so a CTA's copy is long enough to stream.
#include "kernels/device/block_copy.h"

#include "kernels/host/cuda_check.h"

namespace pagedchat::kernels {
namespace {

__global__ void copy_blocks_kernel(KvPoolBytes pool, const BlockCopy* __restrict__ pairs) {
  const BlockCopy p = pairs[blockIdx.x];
  const int chunk = blockIdx.y;
  const uint4* src = reinterpret_cast<const uint4*>(pool.block(chunk, p.src));
  uint4* dst = reinterpret_cast<uint4*>(pool.block(chunk, p.dst));
  const int64_t n = pool.block_bytes / 16;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i];
}

}  // namespace

// ---- launcher -------------------------------------------------------------------------------

void copy_blocks(const KvPoolBytes& pool, const BlockCopy* pairs, int32_t num_pairs, cudaStream_t stream) {
  if (num_pairs <= 0) return;
  if (pool.block_bytes % 16 != 0 || pool.chunk_stride % 16 != 0 || reinterpret_cast<uintptr_t>(pool.base) % 16 != 0)
    fail("copy_blocks: blocks of %lld bytes are not 16-byte aligned", static_cast<long long>(pool.block_bytes));
  if (pool.num_chunks > 65535) fail("copy_blocks: %d chunks is over the grid's 65535", pool.num_chunks);
  copy_blocks_kernel<<<dim3(num_pairs, pool.num_chunks), 256, 0, stream>>>(pool, pairs);
  PC_CUDA_CHECK(cudaGetLastError());
}

}  // namespace pagedchat::kernels
