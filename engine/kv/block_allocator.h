#pragma once
// The simplest block allocator: a free list of physical block ids. The CLI's single-stream
// generator uses it; the KV manager (prefix cache, fork, parking) replaces it for the engine.

#include <cstdint>
#include <optional>
#include <vector>

namespace pagedchat {

class BlockAllocator {
 public:
  explicit BlockAllocator(int32_t num_blocks);
  int32_t num_free() const { return static_cast<int32_t>(free_.size()); }
  std::optional<int32_t> allocate();  // nullopt when the pool is full
  void free(int32_t block);

 private:
  std::vector<int32_t> free_;
};

}  // namespace pagedchat
