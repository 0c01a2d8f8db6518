#pragma once
// The CPU KV pool: per layer, K and V in one f32 buffer indexed by physical block.
// Layout of one layer's K (and V): [num_blocks, block_size, num_kv_heads, head_dim].

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/backend/kv_cache_shape.h"

namespace pagedchat::cpu {

class KvPool {
 public:
  void allocate(const KvCacheShape& shape);  // throws Error if the memory cannot be had
  const KvCacheShape& shape() const { return shape_; }

  // The head_dim floats of one (layer, slot, kv head) of K or V.
  float* key(int layer, int64_t slot, int kv_head) { return at(keys_, layer, slot, kv_head); }
  float* value(int layer, int64_t slot, int kv_head) { return at(values_, layer, slot, kv_head); }
  const float* key(int layer, int64_t slot, int kv_head) const { return at(keys_, layer, slot, kv_head); }
  const float* value(int layer, int64_t slot, int kv_head) const { return at(values_, layer, slot, kv_head); }

  // Copies block `src` of `from` (all layers, K and V) into block `dst` of this pool; `from`
  // may be this pool (copy-on-write) or one of the same layout (swap to and from host).
  void copy_block_from(const KvPool& from, int32_t src, int32_t dst);

 private:
  float* at(const std::vector<float>& buf, int layer, int64_t slot, int kv_head) const {
    size_t i = (static_cast<size_t>(layer) * layer_slots_ + static_cast<size_t>(slot)) * slot_floats_ +
               static_cast<size_t>(kv_head) * shape_.head_dim;
    return const_cast<float*>(buf.data() + i);
  }

  KvCacheShape shape_;
  size_t slot_floats_ = 0;   // num_kv_heads * head_dim
  size_t layer_slots_ = 0;   // num_blocks * block_size
  std::vector<float> keys_;  // [num_layers, num_blocks * block_size, num_kv_heads, head_dim]
  std::vector<float> values_;
};

}  // namespace pagedchat::cpu
