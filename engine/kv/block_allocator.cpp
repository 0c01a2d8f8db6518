#include "engine/kv/block_allocator.h"

#include <cassert>

namespace pagedchat {

BlockAllocator::BlockAllocator(int32_t num_blocks) {
  free_.reserve(num_blocks);
  // Hand out low ids first (pop_back), so a fresh pool fills in order.
  for (int32_t b = num_blocks - 1; b >= 0; --b) free_.push_back(b);
}

std::optional<int32_t> BlockAllocator::allocate() {
  if (free_.empty()) return std::nullopt;
  int32_t b = free_.back();
  free_.pop_back();
  return b;
}

void BlockAllocator::free(int32_t block) {
  assert(block >= 0);
  free_.push_back(block);
}

}  // namespace pagedchat
