// KvManager's prefix cache side: matching a new prompt's full blocks against the cached ones
// and starting a sequence on the hits.
#include <cassert>

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
  hit.num_tokens = static_cast<int32_t>(hit.blocks.size() * bs);
  return hit;
}

int32_t KvManager::num_blocks_to_start(const PrefixHit& hit, int32_t num_new_tokens) const {
  return hit.num_revived + static_cast<int32_t>(num_blocks_for(num_new_tokens));  // hits are whole blocks
}

void KvManager::start(SequenceId seq, const PrefixHit& hit) {
  assert(!has_sequence(seq));
  Sequence s;
  s.block_table = hit.blocks;
  s.num_tokens = hit.num_tokens;
  s.root_hash = hit.root_hash ? hit.root_hash : root_hash_;
  for (int32_t b : hit.blocks) {
    assert(pool_.is_full(b) && pool_.block(b).registered && "stale PrefixHit");
    pool_.add_ref(b);
  }
  seqs_.emplace(seq, std::move(s));
  for (int32_t b : hit.blocks) record(KvEventKind::cache_hit, seq, b);
  counters_.lookup_tokens += hit.num_prompt_tokens;
  counters_.hit_tokens += hit.num_tokens;
  counters_.lookup_collisions += hit.stop == MatchKind::collision;
  counters_.lookup_lineage += hit.stop == MatchKind::lineage;
}

}  // namespace pagedchat
