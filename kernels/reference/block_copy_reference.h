#pragma once
// CPU reference of block copy and swap: every chunk (layer, K or V) of block src copied to
// block dst, pair by pair, in order. The pools may be the same (copy-on-write) or two of the
// same block shape (swap).

#include <cstring>

#include "kernels/common/kv_pool_bytes.h"

namespace pagedchat::kernels {

inline void copy_blocks_reference(const KvPoolBytes& from, const KvPoolBytes& to, const BlockCopy* pairs, size_t num_pairs) {
  for (size_t i = 0; i < num_pairs; ++i)
    for (int32_t c = 0; c < from.num_chunks; ++c)
      std::memcpy(to.block(c, pairs[i].dst), from.block(c, pairs[i].src), static_cast<size_t>(from.block_bytes));
}

}  // namespace pagedchat::kernels
