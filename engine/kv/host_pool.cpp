#include "engine/kv/host_pool.h"

#include <algorithm>
#include <cassert>

namespace pagedchat {

HostPool::HostPool(int32_t num_blocks, int32_t block_size)
    : block_size_(block_size),
      in_use_(num_blocks, 0),
      content_(num_blocks),
      tokens_(static_cast<size_t>(num_blocks) * block_size, -1),
      free_(num_blocks) {
  for (int32_t h = 0; h < num_blocks; ++h) free_.push_back(h);
}

int32_t HostPool::store(const BlockContent& content, std::span<const int32_t> t) {
  assert(num_free() > 0 && static_cast<int32_t>(t.size()) == content.num_filled);
  int32_t h = free_.pop_front();
  in_use_[h] = 1;
  content_[h] = content;
  std::copy(t.begin(), t.end(), tokens_.begin() + static_cast<ptrdiff_t>(h) * block_size_);
  return h;
}

void HostPool::free(int32_t h) {
  assert(in_use(h));
  in_use_[h] = 0;
  content_[h] = BlockContent{};
  free_.push_back(h);
}

}  // namespace pagedchat
