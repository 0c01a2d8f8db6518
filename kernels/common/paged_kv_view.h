#pragma once
// A plain view of one layer's paged KV pool plus the block tables that index it: the pointers,
// the strides and the page-to-address arithmetic, PC_HOST_DEVICE so the CUDA kernels, their CPU
// references and the CPU tests share one piece of index math (FlashInfer's paged_kv_t idea).
//
// The CUDA pool's layout is "HND": per layer, K and V each [num_blocks, num_kv_heads,
// block_size, head_dim]. Why: a decode or prefill CTA works on one (sequence, kv_head), so
// with HND each page it reads is one contiguous run of block_size * head_dim elements
// (2-8 KiB at block sizes 8-32, head dims 64-128), fetched with 16-byte loads and no gaps;
// under an "NHD" layout [num_blocks, block_size, num_kv_heads, head_dim] the same page is
// block_size runs of head_dim elements at a stride. The CPU pool is HND too, for the same
// reason (its rows may be f16 or q8_0). Block copy and swap move whole blocks and do not care.
// The view carries strides, not a layout name, so it reads the CPU pool (f32) too, which is
// how tests compare the two backends on the same tokens.
//
// Not here: layers (one view per layer), element conversion (kv_dtype.h).

#include <cstdint>

#include "engine/common/float16.h"  // PC_HOST_DEVICE

namespace pagedchat::kernels {

template <typename T>
struct PagedKvView {
  T* k = nullptr;                 // one layer's keys, laid out by the strides below
  T* v = nullptr;                 // one layer's values, same layout
  int64_t stride_block = 0;       // elements between physical blocks
  int64_t stride_head = 0;        // elements between kv heads
  int64_t stride_slot = 0;        // elements between the tokens of a block; head_dim is contiguous
  int32_t num_blocks = 0;
  int32_t num_kv_heads = 0;
  int32_t block_size = 0;         // tokens per block
  int32_t head_dim = 0;
  const int32_t* block_tables = nullptr;  // [num_seqs, block_table_stride] physical block ids
  int32_t block_table_stride = 0;         // max_blocks_per_seq

  // Element offset of (physical block, kv head, slot in block), the start of head_dim values.
  PC_HOST_DEVICE int64_t offset(int32_t block, int32_t kv_head, int32_t slot_in_block) const {
    return block * stride_block + kv_head * stride_head + slot_in_block * stride_slot;
  }
  // A flat slot (block * block_size + slot in block), as in the slot mapping.
  PC_HOST_DEVICE int64_t slot_offset(int64_t slot, int32_t kv_head) const {
    return offset(static_cast<int32_t>(slot / block_size), kv_head, static_cast<int32_t>(slot % block_size));
  }
  // The physical block holding token `pos` of sequence `seq`, through its block table.
  PC_HOST_DEVICE int32_t physical_block(int32_t seq, int32_t pos) const {
    return block_tables[static_cast<int64_t>(seq) * block_table_stride + pos / block_size];
  }
  PC_HOST_DEVICE int64_t token_offset(int32_t seq, int32_t pos, int32_t kv_head) const {
    return offset(physical_block(seq, pos), kv_head, pos % block_size);
  }
  PC_HOST_DEVICE T* key(int32_t seq, int32_t pos, int32_t kv_head) const { return k + token_offset(seq, pos, kv_head); }
  PC_HOST_DEVICE T* value(int32_t seq, int32_t pos, int32_t kv_head) const { return v + token_offset(seq, pos, kv_head); }

  // Elements of one layer's K (or V) pool.
  PC_HOST_DEVICE int64_t pool_elements() const { return num_blocks * stride_block; }
};

// Strides of the HND layout (the CUDA and CPU pools) and of NHD; pointers and tables left to fill.
template <typename T>
PagedKvView<T> hnd_view(int32_t num_blocks, int32_t num_kv_heads, int32_t block_size, int32_t head_dim) {
  PagedKvView<T> v;
  v.num_blocks = num_blocks;
  v.num_kv_heads = num_kv_heads;
  v.block_size = block_size;
  v.head_dim = head_dim;
  v.stride_slot = head_dim;
  v.stride_head = static_cast<int64_t>(block_size) * head_dim;
  v.stride_block = static_cast<int64_t>(num_kv_heads) * block_size * head_dim;
  return v;
}
template <typename T>
PagedKvView<T> nhd_view(int32_t num_blocks, int32_t num_kv_heads, int32_t block_size, int32_t head_dim) {
  PagedKvView<T> v = hnd_view<T>(num_blocks, num_kv_heads, block_size, head_dim);
  v.stride_head = head_dim;
  v.stride_slot = static_cast<int64_t>(num_kv_heads) * head_dim;
  return v;
}

}  // namespace pagedchat::kernels
