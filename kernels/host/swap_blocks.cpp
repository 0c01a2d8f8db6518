// Swap by cudaMemcpy2DAsync: a run of `count` blocks is num_chunks rows of count * block_bytes,
// each pool's chunk_stride apart, so one call moves a run across all layers. cudaMemcpyDefault
// lets the driver tell device from pinned host (unified addressing). Pitches past the 2-D
// limit (a pool over 2 GiB per chunk) fall back to one copy per chunk.
#include "kernels/host/swap_blocks.h"

#include <climits>

#include "kernels/host/cuda_check.h"

namespace pagedchat::kernels {

void swap_blocks(const KvPoolBytes& from, const KvPoolBytes& to, std::span<const BlockCopy> pairs, cudaStream_t stream) {
  if (from.block_bytes != to.block_bytes || from.num_chunks != to.num_chunks)
    fail("swap_blocks: pools of different block shapes (%lld x %d bytes vs %lld x %d)",
         static_cast<long long>(from.block_bytes), from.num_chunks, static_cast<long long>(to.block_bytes), to.num_chunks);
  for (const BlockCopy& p : pairs)
    if (p.src < 0 || p.src >= from.num_blocks || p.dst < 0 || p.dst >= to.num_blocks)
      fail("swap_blocks: block pair %d -> %d is outside the pools (%d, %d blocks)", p.src, p.dst, from.num_blocks, to.num_blocks);
  const bool pitched = from.chunk_stride <= INT_MAX && to.chunk_stride <= INT_MAX;
  for (const BlockRun& run : plan_block_runs(pairs.data(), pairs.size())) {
    const size_t width = static_cast<size_t>(run.count) * static_cast<size_t>(from.block_bytes);
    if (pitched) {
      PC_CUDA_CHECK(cudaMemcpy2DAsync(to.block(0, run.dst), static_cast<size_t>(to.chunk_stride), from.block(0, run.src),
                                      static_cast<size_t>(from.chunk_stride), width, static_cast<size_t>(from.num_chunks),
                                      cudaMemcpyDefault, stream));
    } else {
      for (int32_t c = 0; c < from.num_chunks; ++c)
        PC_CUDA_CHECK(cudaMemcpyAsync(to.block(c, run.dst), from.block(c, run.src), width, cudaMemcpyDefault, stream));
    }
  }
}

}  // namespace pagedchat::kernels
