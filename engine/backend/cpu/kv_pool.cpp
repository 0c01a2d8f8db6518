// The CPU KV pool's storage: allocation and whole-block copies.
#include "engine/backend/cpu/kv_pool.h"

#include <algorithm>
#include <new>

#include "engine/common/error.h"

namespace pagedchat::cpu {

void KvPool::allocate(const KvCacheShape& shape) {
  if (shape.num_blocks <= 0 || shape.block_size <= 0 || shape.num_layers <= 0)
    fail("KV pool needs at least one block of at least one slot (got %d blocks of %d)", shape.num_blocks,
         shape.block_size);
  shape_ = shape;
  slot_floats_ = static_cast<size_t>(shape.num_kv_heads) * shape.head_dim;
  layer_slots_ = static_cast<size_t>(shape.num_blocks) * shape.block_size;
  size_t floats = static_cast<size_t>(shape.num_layers) * layer_slots_ * slot_floats_;
  try {
    keys_.assign(floats, 0.0f);
    values_.assign(floats, 0.0f);
  } catch (const std::bad_alloc&) {
    keys_ = {};
    values_ = {};
    fail("cannot allocate a KV pool of %d blocks (%.1f MiB)", shape.num_blocks,
         2.0 * floats * sizeof(float) / (1024.0 * 1024.0));
  }
}

void KvPool::copy_block_from(const KvPool& from, int32_t src, int32_t dst) {
  // A block's slots are contiguous within a layer.
  const size_t block_floats = static_cast<size_t>(shape_.block_size) * slot_floats_;
  const int64_t src_slot = static_cast<int64_t>(src) * shape_.block_size;
  const int64_t dst_slot = static_cast<int64_t>(dst) * shape_.block_size;
  for (int l = 0; l < shape_.num_layers; ++l) {
    std::copy_n(from.key(l, src_slot, 0), block_floats, key(l, dst_slot, 0));
    std::copy_n(from.value(l, src_slot, 0), block_floats, value(l, dst_slot, 0));
  }
}

}  // namespace pagedchat::cpu
