#pragma once
// The device block pool's bookkeeping: per block its ref count, token ids and content
// (BlockContent); the free list (empty blocks, handed out oldest-freed first); the cached list
// (ref count 0, full, content kept, least recently used first); and the prefix cache's index
// from hash to block, with the spare full blocks whose hash is already indexed (duplicates, or
// collisions), one of which takes the index entry when the indexed block loses its content. It moves no K/V data and emits no events: the manager does both.

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/kv/block_hash.h"
#include "engine/kv/block_list.h"
#include "engine/kv/kv_types.h"

namespace pagedchat {

// What the prefix cache found for a request's next full block.
enum class MatchKind : uint8_t {
  hit,        // an indexed block with the same tokens after the same prefix content
  miss,       // nothing indexed under the hash
  collision,  // indexed under the hash, but other tokens or another parent hash: never served
  lineage,    // same tokens and parent hash, but another parent content id: the prefix was
              // computed again after its first copy was evicted, or parent hashes collided;
              // refused, as only content ids are proof
};

struct Match {
  int32_t block = -1;  // when hit
  MatchKind kind = MatchKind::miss;
};

struct Block {
  int32_t ref_count = 0;
  bool registered = false;  // the prefix cache's entry for content.hash
  BlockContent content;
};

class BlockPool {
 public:
  BlockPool(int32_t num_blocks, int32_t block_size, BlockHashFn hash_fn);

  int32_t num_blocks() const { return static_cast<int32_t>(blocks_.size()); }
  int32_t block_size() const { return block_size_; }
  int32_t num_free() const { return free_.size(); }
  int32_t num_cached() const { return cached_.size(); }
  int32_t num_used() const { return num_blocks() - num_free() - num_cached(); }
  int32_t num_available() const { return num_free() + num_cached(); }  // what allocate() can take
  int32_t num_registered() const { return static_cast<int32_t>(index_.size()); }

  const Block& block(int32_t b) const { return blocks_[b]; }
  BlockState state(int32_t b) const;
  bool is_full(int32_t b) const { return blocks_[b].content.num_filled == block_size_; }
  std::span<const int32_t> tokens(int32_t b) const {  // the filled slots
    return {tokens_.data() + static_cast<size_t>(b) * block_size_, static_cast<size_t>(blocks_[b].content.num_filled)};
  }
  const BlockList& cached_list() const { return cached_; }  // LRU first
  const BlockList& free_list() const { return free_; }
  const BlockHashFn& hash_fn() const { return hash_fn_; }
  const std::unordered_map<uint64_t, int32_t>& index() const { return index_; }

  // An empty block with ref count 1: the oldest free block, else the least recently used
  // cached one (its content dropped; *evicted set). Call only if num_available() > 0.
  int32_t allocate(bool* evicted);
  // One more reference: an in-use block is shared; a cached one is revived (leaves the list).
  void add_ref(int32_t b);
  // One reference less. At zero: a block indexed by the prefix cache goes to the newest end
  // of the cached list when keep_content, any other block to the free list (content dropped).
  // Returns the state the block is in afterwards.
  BlockState release(int32_t b, bool keep_content = true);
  // Drops the content of the least recently used cached block and frees it; returns it.
  int32_t evict_lru();

  // Appends one token to an in-use block that is not full.
  void write(int32_t b, int32_t token);
  // Copy-on-write: dst (empty, in use) takes src's first n slots (n < block size; a sequence
  // rewound into a full shared block holds only a prefix of it).
  void copy_tokens(int32_t src, int32_t dst, int32_t n);
  // A rewound sequence's own block (ref count 1) keeps only its first n < block size slots:
  // sealed, it leaves the prefix cache (its hash covered every slot), as when its content is
  // dropped, and is partial again.
  void shrink(int32_t b, int32_t n);
  // b just became full: hashes it after its parent, gives it a content id (that of an indexed
  // block with the same parent and tokens, else a new one) and indexes it if its hash is free,
  // else keeps it as a spare.
  void seal(int32_t b, uint64_t parent_hash, uint64_t parent_content_id);
  // Swap-in: b (empty, in use) takes a host block's tokens and content; a full one is indexed
  // if its hash is free (else kept as a spare).
  void restore(int32_t b, const BlockContent& content, std::span<const int32_t> tokens);

  int32_t lookup(uint64_t hash) const {  // the indexed block, or -1
    auto it = index_.find(hash);
    return it == index_.end() ? -1 : it->second;
  }
  // Whether the indexed block under hash may serve a request's next full block: only if it
  // follows the same parent content with the same tokens.
  Match find_match(uint64_t hash, uint64_t parent_hash, uint64_t parent_content_id, std::span<const int32_t> tokens) const;
  const std::unordered_multimap<uint64_t, int32_t>& spares() const { return spares_; }
  // Seals that found their hash indexed with other content (collision) or lineage.
  uint64_t num_seal_collisions() const { return num_seal_collisions_; }
  uint64_t num_seal_lineage_misses() const { return num_seal_lineage_; }

 private:
  void drop_content(int32_t b);
  void index_if_free(int32_t b);

  int32_t block_size_;
  BlockHashFn hash_fn_;
  std::vector<Block> blocks_;    // [num_blocks]
  std::vector<int32_t> tokens_;  // [num_blocks * block_size]
  BlockList free_, cached_;
  std::unordered_map<uint64_t, int32_t> index_;  // hash -> registered block (in use or cached)
  std::unordered_multimap<uint64_t, int32_t> spares_;  // hash -> full in-use blocks not indexed
  uint64_t next_content_id_ = 1;
  uint64_t num_seal_collisions_ = 0, num_seal_lineage_ = 0;
};

}  // namespace pagedchat
