// KvManager::check_invariants(): every bookkeeping rule checked from scratch, for tests
// (the randomized one runs it after every operation) and for debugging an engine.
#include <algorithm>
#include <unordered_map>

#include "engine/common/error.h"
#include "engine/kv/kv_manager.h"

namespace pagedchat {

std::string KvManager::check_invariants() const {
  if (std::string e = check_pool(); !e.empty()) return e;
  if (std::string e = check_index(); !e.empty()) return e;
  return check_sequences();
}

// Ref counts against block tables; the free and cached lists against ref counts and content.
std::string KvManager::check_pool() const {
  std::vector<int32_t> refs(num_blocks(), 0);
  for (const auto& [id, s] : seqs_)
    if (on_device(s))
      for (int32_t b : s.block_table) ++refs[b];
  int32_t used = 0;
  for (int32_t b = 0; b < num_blocks(); ++b) {
    const Block& blk = pool_.block(b);
    bool in_free = pool_.free_list().contains(b), in_cached = pool_.cached_list().contains(b);
    if (blk.ref_count != refs[b])
      return format("block %d: ref count %d but %d block-table references", b, blk.ref_count, refs[b]);
    if (blk.ref_count > 0 && (in_free || in_cached)) return format("block %d is in use and on a free/cached list", b);
    if (blk.ref_count == 0 && in_free == in_cached) return format("block %d has no reference and is on %d lists", b, in_free + in_cached);
    if (in_free && (blk.registered || blk.content.num_filled != 0 || blk.content.content_id != 0))
      return format("free block %d keeps content", b);
    if (in_cached && (!blk.registered || !pool_.is_full(b))) return format("cached block %d is not a full indexed block", b);
    used += blk.ref_count > 0;
  }
  if (pool_.num_free() + pool_.num_cached() + used != num_blocks())
    return format("free %d + cached %d + used %d != %d blocks", pool_.num_free(), pool_.num_cached(), used, num_blocks());
  return {};
}

// Every index entry names a full block whose stored tokens hash, after its stored parent hash,
// to the entry's key; blocks with one content id hold the same tokens after the same parent.
std::string KvManager::check_index() const {
  int32_t registered = 0;
  for (int32_t b = 0; b < num_blocks(); ++b) registered += pool_.block(b).registered;
  if (registered != pool_.num_registered())
    return format("%d blocks marked indexed, %d index entries", registered, pool_.num_registered());
  for (const auto& [hash, b] : pool_.index()) {
    const Block& blk = pool_.block(b);
    if (!blk.registered || blk.content.hash != hash || !pool_.is_full(b))
      return format("index entry %016llx -> block %d does not match the block", (unsigned long long)hash, b);
    if (pool_.hash_fn()(blk.content.parent_hash, pool_.tokens(b)) != hash)
      return format("block %d's tokens do not hash to its index key", b);
  }
  // Spares: exactly the full device blocks not indexed, each under its hash, which is indexed.
  int32_t num_spare_blocks = 0;
  for (int32_t b = 0; b < num_blocks(); ++b) num_spare_blocks += pool_.is_full(b) && !pool_.block(b).registered;
  if (num_spare_blocks != static_cast<int32_t>(pool_.spares().size()))
    return format("%d full blocks outside the index, %zu spares", num_spare_blocks, pool_.spares().size());
  for (const auto& [hash, b] : pool_.spares()) {
    const Block& blk = pool_.block(b);
    if (blk.registered || blk.ref_count == 0 || !pool_.is_full(b) || blk.content.hash != hash)
      return format("spare %016llx -> block %d does not match the block", (unsigned long long)hash, b);
    if (pool_.lookup(hash) < 0) return format("spare block %d's hash is not indexed", b);
  }
  struct Seen { std::span<const int32_t> tokens; uint64_t parent; };
  std::unordered_map<uint64_t, Seen> by_id;
  auto check_content = [&](const BlockContent& c, std::span<const int32_t> t, const char* where, int32_t id) -> std::string {
    bool full = c.num_filled == block_size();
    if (full != (c.content_id != 0)) return format("%s block %d: full %d but content id %llu", where, id, full, (unsigned long long)c.content_id);
    if (!full) return {};
    auto [it, added] = by_id.emplace(c.content_id, Seen{t, c.parent_content_id});
    if (!added && (it->second.parent != c.parent_content_id || !std::equal(t.begin(), t.end(), it->second.tokens.begin())))
      return format("%s block %d: content id %llu names two contents", where, id, (unsigned long long)c.content_id);
    return {};
  };
  for (int32_t b = 0; b < num_blocks(); ++b)
    if (std::string e = check_content(pool_.block(b).content, pool_.tokens(b), "device", b); !e.empty()) return e;
  for (int32_t h = 0; h < host_.num_blocks(); ++h)
    if (std::string e = check_content(host_.content(h), host_.tokens(h), "host", h); !e.empty()) return e;
  return {};
}

// Each table covers exactly its token count, chains its blocks' content, and the host pool
// holds exactly the swapped sequences' blocks, each once.
std::string KvManager::check_sequences() const {
  const int32_t bs = block_size();
  std::vector<int32_t> host_refs(host_.num_blocks(), 0);
  for (const auto& [id, s] : seqs_) {
    if (static_cast<int64_t>(s.block_table.size()) != num_blocks_for(s.num_tokens))
      return format("seq %lld: %zu blocks for %d tokens", (long long)id, s.block_table.size(), s.num_tokens);
    uint64_t parent_hash = s.root_hash, parent_id = 0;
    for (size_t i = 0; i < s.block_table.size(); ++i) {
      int32_t b = s.block_table[i];
      if (!on_device(s) && (b < 0 || b >= host_.num_blocks() || !host_.in_use(b)))
        return format("seq %lld: host block %d is not in use", (long long)id, b);
      const BlockContent& c = on_device(s) ? pool_.block(b).content : host_.content(b);
      int32_t want = std::min<int32_t>(bs, s.num_tokens - static_cast<int32_t>(i) * bs);
      // A rewound sequence may hold only a prefix of its last block (see rewind()).
      const bool prefix_ok = want < bs && c.num_filled > want;
      if (c.num_filled != want && !prefix_ok)
        return format("seq %lld: block %zu holds %d tokens, not %d", (long long)id, i, c.num_filled, want);
      if (want == bs && (c.parent_hash != parent_hash || c.parent_content_id != parent_id))
        return format("seq %lld: block %zu does not follow its parent", (long long)id, i);
      parent_hash = c.hash;
      parent_id = c.content_id;
      if (!on_device(s)) ++host_refs[b];
    }
  }
  int32_t host_used = 0;
  for (int32_t h = 0; h < host_.num_blocks(); ++h) {
    if (host_refs[h] != (host_.in_use(h) ? 1 : 0))
      return format("host block %d: in use %d but %d references", h, host_.in_use(h), host_refs[h]);
    host_used += host_.in_use(h);
  }
  if (host_used + host_.num_free() != host_.num_blocks())
    return format("host: used %d + free %d != %d", host_used, host_.num_free(), host_.num_blocks());
  return {};
}

}  // namespace pagedchat
