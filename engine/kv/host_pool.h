#pragma once
// The host-memory pool that swapped-out sequences live in: N blocks, each owned by exactly
// one swapped sequence (no sharing on the host: a swap-in shares again through the prefix
// cache). Bookkeeping only; the backend moves the bytes.

#include <cstdint>
#include <span>
#include <vector>

#include "engine/kv/block_list.h"
#include "engine/kv/kv_types.h"

namespace pagedchat {

class HostPool {
 public:
  HostPool(int32_t num_blocks, int32_t block_size);

  int32_t num_blocks() const { return static_cast<int32_t>(in_use_.size()); }
  int32_t num_free() const { return free_.size(); }
  int32_t num_used() const { return num_blocks() - num_free(); }
  bool in_use(int32_t h) const { return in_use_[h] != 0; }
  const BlockContent& content(int32_t h) const { return content_[h]; }
  std::span<const int32_t> tokens(int32_t h) const {
    return {tokens_.data() + static_cast<size_t>(h) * block_size_, static_cast<size_t>(content_[h].num_filled)};
  }

  // Takes a free block and stores a device block's tokens and content in it (the K/V bytes
  // follow by a swap-out transfer). Call only if num_free() > 0.
  int32_t store(const BlockContent& content, std::span<const int32_t> tokens);
  void free(int32_t h);

 private:
  int32_t block_size_;
  std::vector<uint8_t> in_use_;        // [num_blocks]
  std::vector<BlockContent> content_;  // [num_blocks]
  std::vector<int32_t> tokens_;        // [num_blocks * block_size]
  BlockList free_;
};

}  // namespace pagedchat
