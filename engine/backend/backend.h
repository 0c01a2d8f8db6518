#pragma once
// The seam between the engine and a device: the KV pool lives on the device, the forward
// pass runs there, and blocks are copied there (copy-on-write). CpuBackend is always built;
// CudaBackend (kernels/) when the CUDA toolkit is found.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/backend/forward_batch.h"
#include "engine/backend/kv_cache_shape.h"
#include "engine/common/error.h"

namespace pagedchat {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;

  // (Re)allocates the KV pool; throws Error when the memory cannot be had.
  virtual void allocate_kv(const KvCacheShape& shape) = 0;
  virtual const KvCacheShape& kv_shape() const = 0;
  // Bytes of one block of the pool (all layers, K and V, in the pool's element type), which the
  // engine's memory figures (bytes held, saved by sharing) count.
  // A block of block_size tokens; callable before allocate_kv (the pool's size from a budget).
  virtual uint64_t kv_block_bytes(int32_t block_size) const = 0;

  // Runs the model over the batch, writing each token's K/V into its slot, and returns the
  // logits of the rows in batch.logits_indices: [num_logits, vocab_size] row-major.
  // The batch must be valid (positions, slots and block tables in range): its builder (the
  // generator, the engine's scheduler from the KV manager's tables) guarantees it.
  virtual void forward(const ForwardBatch& batch, std::vector<float>& logits) = 0;

  // Copies whole blocks (all layers, K and V) inside the pool.
  virtual void copy_blocks(std::span<const BlockCopy> copies) = 0;

  // Swapping (preemption that keeps a sequence's KV): a host-memory pool of num_blocks blocks
  // of the device pool's shape, and whole-block copies between the two. A backend without
  // it throws Error; the engine then preempts by recompute only.
  virtual void allocate_host_kv(int num_blocks);
  virtual void swap_out(std::span<const BlockCopy> pairs);  // device src -> host dst
  virtual void swap_in(std::span<const BlockCopy> pairs);   // host src -> device dst

  // The disk tier (engine/kv/disk): one block's bytes (all layers, K and V, kv_block_bytes of
  // the pool's block size) out of the pool and into it, laid out as kv_layout() names (which a
  // file on disk must match). Empty kv_layout(): the backend has no such copies, and the engine
  // runs without a disk tier; the copies then throw Error.
  virtual std::string kv_layout() const { return {}; }

  // A mixture of experts: the experts the last forward pass ran, summed over the layers, each
  // counted once however many of the batch's tokens chose it; -1 when the backend does not count.
  virtual int64_t experts_run_last_forward() const { return -1; }
  virtual void read_block(int32_t block, std::span<uint8_t> out) const;
  virtual void write_block(int32_t block, std::span<const uint8_t> bytes);
};

inline void Backend::allocate_host_kv(int num_blocks) {
  if (num_blocks > 0) fail("the %.*s backend cannot swap KV blocks", static_cast<int>(name().size()), name().data());
}
inline void Backend::swap_out(std::span<const BlockCopy>) { allocate_host_kv(1); }
inline void Backend::swap_in(std::span<const BlockCopy>) { allocate_host_kv(1); }
inline void Backend::read_block(int32_t, std::span<uint8_t>) const {
  fail("the %.*s backend cannot copy KV blocks to disk", static_cast<int>(name().size()), name().data());
}
inline void Backend::write_block(int32_t, std::span<const uint8_t>) {
  fail("the %.*s backend cannot copy KV blocks from disk", static_cast<int>(name().size()), name().data());
}

}  // namespace pagedchat
