// KvManager's prefix cache side: matching a new prompt's full blocks against the cached ones
// and starting a sequence on the hits.
#include <algorithm>
#include <cassert>
#include <utility>

#include "engine/kv/kv_manager.h"

namespace pagedchat {

PrefixHit KvManager::find_prefix(std::span<const int32_t> prompt, uint64_t cache_salt) const {
  PrefixHit hit;
  hit.root_hash = cache_salt == 0 ? root_hash_ : hash_block_tokens(root_hash_ ^ cache_salt, {});
  hit.num_prompt_tokens = static_cast<int32_t>(prompt.size());
  const size_t bs = static_cast<size_t>(block_size());
  // The last prompt token is always computed (its logits start the reply), so a prompt that
  // ends on a block boundary does not look up its last block.
  size_t num_full = prompt.empty() ? 0 : (prompt.size() - 1) / bs;
  uint64_t parent_hash = hit.root_hash, parent_content_id = 0;
  for (size_t i = 0; i < num_full; ++i) {
    std::span<const int32_t> tokens = prompt.subspan(i * bs, bs);
    uint64_t hash = pool_.hash_fn()(parent_hash, tokens);
    Match m = pool_.find_match(hash, parent_hash, parent_content_id, tokens);
    hit.stop = m.kind;
    if (m.kind != MatchKind::hit) break;
    int32_t b = m.block;
    hit.blocks.push_back(b);
    if (pool_.block(b).ref_count == 0) ++hit.num_revived;
    parent_hash = hash;
    parent_content_id = pool_.block(b).content.content_id;
  }
  if (hit.stop == MatchKind::hit) hit.stop = MatchKind::miss;  // ran to the end
  // Past a plain miss, the blocks read from disk for this prompt.
  for (size_t i = hit.blocks.size(); hit.stop == MatchKind::miss && i < num_full && !staged_.empty(); ++i) {
    std::span<const int32_t> tokens = prompt.subspan(i * bs, bs);
    const uint64_t hash = pool_.hash_fn()(parent_hash, tokens);
    auto it = staged_.find(hash);
    if (it == staged_.end() || it->second.parent_hash != parent_hash ||
        !std::equal(tokens.begin(), tokens.end(), it->second.tokens.begin(), it->second.tokens.end()))
      break;
    hit.staged.push_back(hash);
    parent_hash = hash;
  }
  hit.num_tokens = static_cast<int32_t>((hit.blocks.size() + hit.staged.size()) * bs);
  return hit;
}

std::vector<KvManager::ChainBlock> KvManager::chain_past_hits(std::span<const int32_t> prompt, uint64_t cache_salt,
                                                              int32_t max_blocks) const {
  const PrefixHit hit = find_prefix(prompt, cache_salt);
  std::vector<ChainBlock> chain;
  if (hit.stop != MatchKind::miss) return chain;
  const size_t bs = static_cast<size_t>(block_size());
  const size_t num_full = prompt.empty() ? 0 : (prompt.size() - 1) / bs;  // as find_prefix
  uint64_t parent_hash = hit.root_hash;
  for (size_t i = 0; i < num_full && chain.size() < static_cast<size_t>(max_blocks); ++i) {
    const uint64_t hash = pool_.hash_fn()(parent_hash, prompt.subspan(i * bs, bs));
    if (i >= hit.blocks.size() + hit.staged.size()) chain.push_back({hash, parent_hash, static_cast<int32_t>(i * bs)});
    parent_hash = hash;
  }
  return chain;
}

std::vector<uint64_t> KvManager::chain_hashes(std::span<const int32_t> tokens, uint64_t cache_salt) const {
  std::vector<uint64_t> hashes;
  uint64_t parent = cache_salt == 0 ? root_hash_ : hash_block_tokens(root_hash_ ^ cache_salt, {});
  const size_t bs = static_cast<size_t>(block_size());
  for (size_t i = 0; i + bs <= tokens.size(); i += bs) {
    parent = pool_.hash_fn()(parent, tokens.subspan(i, bs));
    hashes.push_back(parent);
  }
  return hashes;
}

void KvManager::stage(uint64_t hash, uint64_t parent_hash, std::span<const int32_t> tokens, int32_t staging_id) {
  assert(static_cast<int32_t>(tokens.size()) == block_size());
  staged_.try_emplace(hash, Staged{parent_hash, std::vector<int32_t>(tokens.begin(), tokens.end()), staging_id});  // the first stays
}

std::vector<KvManager::SealedBlock> KvManager::take_sealed() {
  std::vector<SealedBlock> out;
  for (int32_t b : std::exchange(sealed_, {})) {
    const Block& block = pool_.block(b);
    if (!pool_.is_full(b) || block.content.hash == 0) continue;  // emptied or shrunk since
    std::span<const int32_t> t = pool_.tokens(b);
    out.push_back({b, block.content.hash, block.content.parent_hash, std::vector<int32_t>(t.begin(), t.end())});
  }
  return out;
}

void KvManager::record_disk_write(int32_t block) {
  ++counters_.disk_writes;
  record(KvEventKind::disk_write, -1, block);
}

int32_t KvManager::num_blocks_to_start(const PrefixHit& hit, int32_t num_new_tokens) const {
  // Hits are whole blocks; each staged one takes a fresh block.
  return hit.num_revived + static_cast<int32_t>(hit.staged.size()) + static_cast<int32_t>(num_blocks_for(num_new_tokens));
}

void KvManager::start(SequenceId seq, const PrefixHit& hit) {
  assert(!has_sequence(seq));
  Sequence s;
  s.block_table = hit.blocks;
  s.num_tokens = static_cast<int32_t>(hit.blocks.size()) * block_size();
  s.root_hash = hit.root_hash ? hit.root_hash : root_hash_;
  for (int32_t b : hit.blocks) {
    assert(pool_.is_full(b) && pool_.block(b).registered && "stale PrefixHit");
    pool_.add_ref(b);
  }
  Sequence& added = seqs_.emplace(seq, std::move(s)).first->second;
  for (int32_t b : hit.blocks) record(KvEventKind::cache_hit, seq, b);
  // The staged blocks: fresh blocks that take the tokens now and their K/V by a transfer before
  // the forward pass, full and indexed as a computed block is.
  for (uint64_t hash : hit.staged) {
    const auto it = staged_.find(hash);
    assert(it != staged_.end() && "stale PrefixHit");
    const int32_t b = take_block(seq);
    for (int32_t t : it->second.tokens) pool_.write(b, t);
    added.block_table.push_back(b);
    added.num_tokens += block_size();
    seal_last(added);
    transfers_.push_back({TransferKind::from_disk, it->second.id, b});
    record(KvEventKind::disk_read, seq, b);
    staged_.erase(it);
    ++counters_.disk_reads;
  }
  counters_.disk_hit_tokens += static_cast<int64_t>(hit.staged.size()) * block_size();
  counters_.lookup_tokens += hit.num_prompt_tokens;
  counters_.hit_tokens += static_cast<int64_t>(hit.blocks.size()) * block_size();
  counters_.lookup_collisions += hit.stop == MatchKind::collision;
  counters_.lookup_lineage += hit.stop == MatchKind::lineage;
}

}  // namespace pagedchat
