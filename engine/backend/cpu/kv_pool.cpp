// The CPU KV pool's storage: allocation, row stores and whole-block copies.
#include "engine/backend/cpu/kv_pool.h"

#include <algorithm>
#include <new>

#include "engine/common/error.h"

namespace pagedchat::cpu {

void KvPool::allocate(const KvCacheShape& shape, KvType type) {
  if (shape.num_blocks <= 0 || shape.block_size <= 0 || shape.num_layers <= 0)
    fail("KV pool needs at least one block of at least one slot (got %d blocks of %d)", shape.num_blocks,
         shape.block_size);
  if (!kv_type_fits(type, shape.head_dim))
    fail("KV type %s needs a head size that is a multiple of 32 (this model's is %d)", kv_type_name(type), shape.head_dim);
  shape_ = shape;
  type_ = type;
  row_bytes_ = kv_row_bytes(type, shape.head_dim);
  slot_bytes_ = static_cast<size_t>(shape.num_kv_heads) * row_bytes_;
  layer_slots_ = static_cast<size_t>(shape.num_blocks) * shape.block_size;
  const size_t bytes = static_cast<size_t>(shape.num_layers) * layer_slots_ * slot_bytes_;
  try {
    for (Buffer* b : {&keys_, &values_}) {
      b->bytes.assign(bytes + 64, 0);
      const uintptr_t p = reinterpret_cast<uintptr_t>(b->bytes.data());
      b->base = b->bytes.data() + ((64 - p % 64) % 64);
    }
  } catch (const std::bad_alloc&) {
    keys_ = {};
    values_ = {};
    fail("cannot allocate a KV pool of %d blocks (%.1f MiB)", shape.num_blocks, 2.0 * bytes / (1024.0 * 1024.0));
  }
}

void KvPool::store(int layer, int64_t slot, int kv_head, const float* k, const float* v) {
  encode_kv_row(type_, k, at(keys_, layer, slot, kv_head), shape_.head_dim);
  encode_kv_row(type_, v, at(values_, layer, slot, kv_head), shape_.head_dim);
}

float* KvPool::f32_row(Buffer& buf, int layer, int64_t slot, int kv_head) {
  if (type_ != KvType::F32) fail("the KV pool holds %s, not f32 rows", kv_type_name(type_));
  return reinterpret_cast<float*>(at(buf, layer, slot, kv_head));
}

void KvPool::copy_block_from(const KvPool& from, int32_t src, int32_t dst) {
  // A block's heads and slots are contiguous within a layer.
  const size_t n = block_row_bytes();
  for (int l = 0; l < shape_.num_layers; ++l) {
    std::copy_n(from.key_block(l, src, 0), n, block_at(keys_, l, dst, 0));
    std::copy_n(from.value_block(l, src, 0), n, block_at(values_, l, dst, 0));
  }
}

void KvPool::read_block(int32_t block, uint8_t* out) const {
  const size_t n = block_row_bytes();
  for (int l = 0; l < shape_.num_layers; ++l) {
    out = std::copy_n(key_block(l, block, 0), n, out);
    out = std::copy_n(value_block(l, block, 0), n, out);
  }
}

void KvPool::write_block(int32_t block, const uint8_t* bytes) {
  const size_t n = block_row_bytes();
  for (int l = 0; l < shape_.num_layers; ++l) {
    std::copy_n(bytes, n, block_at(keys_, l, block, 0));
    std::copy_n(bytes + n, n, block_at(values_, l, block, 0));
    bytes += 2 * n;
  }
}

}  // namespace pagedchat::cpu
