#pragma once
// The CPU KV pool: per layer, K and V in one buffer of rows of the pool's element type
// (kv_type.h), indexed by physical block. Layout of one layer's K (and V):
// [num_blocks, num_kv_heads, block_size, row] ("HND", as the CUDA pool), a row being head_dim
// elements (f32, f16) or head_dim / 32 Q8_0 blocks. Why head before slot: attention works on
// one (sequence, KV head) at a time, and so reads one contiguous run per block; with slots
// first it read a row out of every num_kv_heads, and the memory system fetched the others too.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/backend/kv_cache_shape.h"
#include "engine/backend/kv_type.h"

namespace pagedchat::cpu {

class KvPool {
 public:
  KvPool() = default;
  KvPool(const KvPool&) = delete;  // a copy's row pointers would point into the original
  KvPool& operator=(const KvPool&) = delete;
  KvPool(KvPool&&) = default;
  KvPool& operator=(KvPool&&) = default;

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
  // The first row of a block's kv head; its block_size rows follow, row_bytes() apart.
  const uint8_t* key_block(int layer, int32_t block, int kv_head) const { return block_at(keys_, layer, block, kv_head); }
  const uint8_t* value_block(int layer, int32_t block, int kv_head) const {
    return block_at(values_, layer, block, kv_head);
  }
  // Stores a token's K and V of one kv head (head_dim floats each) in the pool's type.
  void store(int layer, int64_t slot, int kv_head, const float* k, const float* v);

  // Float views for an f32 pool only (tests that write or read the pool as floats).
  float* key(int layer, int64_t slot, int kv_head) { return f32_row(keys_, layer, slot, kv_head); }
  float* value(int layer, int64_t slot, int kv_head) { return f32_row(values_, layer, slot, kv_head); }

  // Copies block `src` of `from` (all layers, K and V) into block `dst` of this pool; `from`
  // may be this pool (copy-on-write) or one of the same shape and type (swap to and from host).
  void copy_block_from(const KvPool& from, int32_t src, int32_t dst);
  // A block's bytes (block_bytes()): each layer's K, then its V, layer by layer.
  void read_block(int32_t block, uint8_t* out) const;
  void write_block(int32_t block, const uint8_t* bytes);

 private:
  size_t block_row_bytes() const { return static_cast<size_t>(shape_.block_size) * slot_bytes_; }  // a layer's K of a block
  // The buffers start on a cache line (allocated 64 bytes over and offset), so a row whose
  // bytes are a multiple of 64 takes whole lines: fewer lines read per key at long context.
  struct Buffer {
    std::vector<uint8_t> bytes;
    uint8_t* base = nullptr;
  };
  uint8_t* block_at(const Buffer& buf, int layer, int32_t block, int kv_head) const {
    const size_t run = static_cast<size_t>(layer) * shape_.num_blocks + static_cast<size_t>(block);  // (layer, block)
    return buf.base + (run * shape_.num_kv_heads + static_cast<size_t>(kv_head)) * shape_.block_size * row_bytes_;
  }
  uint8_t* at(const Buffer& buf, int layer, int64_t slot, int kv_head) const {
    return block_at(buf, layer, static_cast<int32_t>(slot / shape_.block_size), kv_head) +
           static_cast<size_t>(slot % shape_.block_size) * row_bytes_;
  }
  float* f32_row(Buffer& buf, int layer, int64_t slot, int kv_head);

  KvCacheShape shape_;
  KvType type_ = KvType::F32;
  int64_t row_bytes_ = 0;
  size_t slot_bytes_ = 0;    // num_kv_heads * row_bytes
  size_t layer_slots_ = 0;   // num_blocks * block_size
  Buffer keys_;  // [num_layers, num_blocks, num_kv_heads, block_size, row]
  Buffer values_;
};

}  // namespace pagedchat::cpu
