#pragma once
// The CPU KV pool: per layer, K and V in one buffer of rows of the pool's element type
// (kv_type.h), indexed by physical block. Layout of one layer's K (and V):
// [num_blocks, block_size, num_kv_heads, row], a row being head_dim elements (f32, f16) or
// head_dim / 32 Q8_0 blocks.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/backend/kv_cache_shape.h"
#include "engine/backend/kv_type.h"

namespace pagedchat::cpu {

class KvPool {
 public:
  // Throws Error if the memory cannot be had or the type does not fit the head size.
  void allocate(const KvCacheShape& shape, KvType type = KvType::F32);
  const KvCacheShape& shape() const { return shape_; }
  KvType type() const { return type_; }
  int64_t row_bytes() const { return row_bytes_; }
  // Bytes of one block: all layers, K and V.
  uint64_t block_bytes() const { return 2ull * shape_.num_layers * block_row_bytes(); }

  // The row of one (layer, slot, kv head) of K or V.
  const uint8_t* key_row(int layer, int64_t slot, int kv_head) const { return at(keys_, layer, slot, kv_head); }
  const uint8_t* value_row(int layer, int64_t slot, int kv_head) const { return at(values_, layer, slot, kv_head); }
  // Stores a token's K and V of one kv head (head_dim floats each) in the pool's type.
  void store(int layer, int64_t slot, int kv_head, const float* k, const float* v);

  // Float views for an f32 pool only (tests that write or read the pool as floats).
  float* key(int layer, int64_t slot, int kv_head) { return f32_row(keys_, layer, slot, kv_head); }
  float* value(int layer, int64_t slot, int kv_head) { return f32_row(values_, layer, slot, kv_head); }

  // Copies block `src` of `from` (all layers, K and V) into block `dst` of this pool; `from`
  // may be this pool (copy-on-write) or one of the same shape and type (swap to and from host).
  void copy_block_from(const KvPool& from, int32_t src, int32_t dst);

 private:
  size_t block_row_bytes() const { return static_cast<size_t>(shape_.block_size) * slot_bytes_; }
  uint8_t* at(const std::vector<uint8_t>& buf, int layer, int64_t slot, int kv_head) const {
    const size_t i = (static_cast<size_t>(layer) * layer_slots_ + static_cast<size_t>(slot)) * slot_bytes_ +
                     static_cast<size_t>(kv_head) * row_bytes_;
    return const_cast<uint8_t*>(buf.data() + i);
  }
  float* f32_row(std::vector<uint8_t>& buf, int layer, int64_t slot, int kv_head);

  KvCacheShape shape_;
  KvType type_ = KvType::F32;
  int64_t row_bytes_ = 0;
  size_t slot_bytes_ = 0;    // num_kv_heads * row_bytes
  size_t layer_slots_ = 0;   // num_blocks * block_size
  std::vector<uint8_t> keys_;  // [num_layers, num_blocks * block_size, num_kv_heads, row]
  std::vector<uint8_t> values_;
};

}  // namespace pagedchat::cpu
