#include "engine/kv/block_pool.h"

#include <algorithm>
#include <cassert>

namespace pagedchat {

BlockPool::BlockPool(int32_t num_blocks, int32_t block_size, BlockHashFn hash_fn)
    : block_size_(block_size),
      hash_fn_(std::move(hash_fn)),
      blocks_(num_blocks),
      tokens_(static_cast<size_t>(num_blocks) * block_size, -1),
      free_(num_blocks),
      cached_(num_blocks) {
  for (int32_t b = 0; b < num_blocks; ++b) free_.push_back(b);  // a fresh pool fills in order
}

BlockState BlockPool::state(int32_t b) const {
  if (blocks_[b].ref_count > 0) return BlockState::in_use;
  return cached_.contains(b) ? BlockState::cached : BlockState::free;
}

int32_t BlockPool::allocate(bool* evicted) {
  assert(num_available() > 0);
  *evicted = free_.empty();
  int32_t b = free_.empty() ? evict_lru() : free_.front();
  free_.remove(b);
  Block& blk = blocks_[b];
  assert(blk.ref_count == 0 && !blk.registered && blk.content.num_filled == 0);
  blk.ref_count = 1;
  return b;
}

void BlockPool::add_ref(int32_t b) {
  Block& blk = blocks_[b];
  if (blk.ref_count == 0) {
    assert(cached_.contains(b));
    cached_.remove(b);
  }
  ++blk.ref_count;
}

BlockState BlockPool::release(int32_t b, bool keep_content) {
  Block& blk = blocks_[b];
  assert(blk.ref_count > 0);
  if (--blk.ref_count > 0) return BlockState::in_use;
  if (blk.registered && keep_content) {
    cached_.push_back(b);
    return BlockState::cached;
  }
  drop_content(b);
  free_.push_back(b);
  return BlockState::free;
}

int32_t BlockPool::evict_lru() {
  assert(!cached_.empty());
  int32_t b = cached_.pop_front();
  drop_content(b);
  free_.push_back(b);
  return b;
}

void BlockPool::drop_content(int32_t b) {
  Block& blk = blocks_[b];
  uint64_t hash = blk.content.hash;
  if (blk.registered) {
    index_.erase(hash);
    blk.registered = false;
    // A spare with this hash takes the entry: a block computed again later then finds it and
    // takes its content id, so the children of both copies stay one lineage.
    if (auto spare = spares_.find(hash); spare != spares_.end()) {
      index_.emplace(hash, spare->second);
      blocks_[spare->second].registered = true;
      spares_.erase(spare);
    }
  } else if (blk.content.content_id != 0) {
    auto [first, last] = spares_.equal_range(hash);
    spares_.erase(std::find_if(first, last, [b](const auto& e) { return e.second == b; }));
  }
  blk.content = BlockContent{};
}

void BlockPool::write(int32_t b, int32_t token) {
  Block& blk = blocks_[b];
  assert(blk.ref_count > 0 && blk.content.num_filled < block_size_);
  tokens_[static_cast<size_t>(b) * block_size_ + blk.content.num_filled++] = token;
}

void BlockPool::copy_tokens(int32_t src, int32_t dst, int32_t n) {
  assert(blocks_[dst].content.num_filled == 0 && n < block_size_ && n <= blocks_[src].content.num_filled);
  std::span<const int32_t> t = tokens(src).first(static_cast<size_t>(n));
  std::copy(t.begin(), t.end(), tokens_.begin() + static_cast<ptrdiff_t>(dst) * block_size_);
  blocks_[dst].content.num_filled = n;
}

void BlockPool::shrink(int32_t b, int32_t n) {
  assert(blocks_[b].ref_count == 1 && n < block_size_ && n <= blocks_[b].content.num_filled);
  drop_content(b);  // the slots' tokens stay in tokens_; only the first n count now
  blocks_[b].content.num_filled = n;
}

Match BlockPool::find_match(uint64_t hash, uint64_t parent_hash, uint64_t parent_content_id,
                            std::span<const int32_t> want) const {
  int32_t r = lookup(hash);
  if (r < 0) return {};
  const BlockContent& c = blocks_[r].content;
  std::span<const int32_t> have = tokens(r);
  if (c.parent_hash != parent_hash || !std::equal(have.begin(), have.end(), want.begin(), want.end()))
    return {-1, MatchKind::collision};
  if (c.parent_content_id != parent_content_id) return {-1, MatchKind::lineage};
  return {r, MatchKind::hit};
}

void BlockPool::seal(int32_t b, uint64_t parent_hash, uint64_t parent_content_id) {
  Block& blk = blocks_[b];
  assert(is_full(b) && blk.content.content_id == 0);
  blk.content.parent_hash = parent_hash;
  blk.content.parent_content_id = parent_content_id;
  blk.content.hash = hash_fn_(parent_hash, tokens(b));
  // A block computed again (a fork decoding the same tokens, a prompt's recomputed last block)
  // has the same KV as the indexed one: it takes that content id, so its children still match.
  Match m = find_match(blk.content.hash, parent_hash, parent_content_id, tokens(b));
  num_seal_collisions_ += m.kind == MatchKind::collision;
  num_seal_lineage_ += m.kind == MatchKind::lineage;
  blk.content.content_id = m.kind == MatchKind::hit ? blocks_[m.block].content.content_id : next_content_id_++;
  index_if_free(b);
}

void BlockPool::restore(int32_t b, const BlockContent& content, std::span<const int32_t> t) {
  Block& blk = blocks_[b];
  assert(blk.ref_count > 0 && blk.content.num_filled == 0 && static_cast<int32_t>(t.size()) == content.num_filled);
  std::copy(t.begin(), t.end(), tokens_.begin() + static_cast<ptrdiff_t>(b) * block_size_);
  blk.content = content;
  if (is_full(b)) index_if_free(b);
}

void BlockPool::index_if_free(int32_t b) {
  Block& blk = blocks_[b];
  if (index_.emplace(blk.content.hash, b).second) blk.registered = true;
  else spares_.emplace(blk.content.hash, b);
}

}  // namespace pagedchat
