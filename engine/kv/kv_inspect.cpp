// KvManager's read-outs for the stats panel and the visualizer: stats() and snapshot().
#include <algorithm>

#include "engine/kv/kv_manager.h"

namespace pagedchat {

KvStats KvManager::stats(uint64_t bytes_per_block) const {
  KvStats st;
  st.block_size = block_size();
  st.num_blocks = num_blocks();
  st.num_used_blocks = pool_.num_used();
  st.num_cached_blocks = pool_.num_cached();
  st.num_free_blocks = pool_.num_free();
  st.num_host_blocks = host_.num_blocks();
  st.num_swapped_blocks = host_.num_used();
  for (const auto& [id, s] : seqs_) {
    st.num_running += s.state == SequenceState::running;
    st.num_parked += s.state == SequenceState::parked;
    st.num_swapped += s.state == SequenceState::swapped;
  }
  for (int32_t b = 0; b < num_blocks(); ++b) {
    const Block& blk = pool_.block(b);
    if (blk.ref_count == 0) continue;
    st.num_tokens_stored += blk.content.num_filled;
    st.num_empty_slots += block_size() - blk.content.num_filled;
    if (blk.ref_count > 1) {
      ++st.num_shared_blocks;
      st.num_shared_refs += blk.ref_count - 1;
    }
  }
  st.bytes_per_block = bytes_per_block;
  st.bytes_saved_by_sharing = static_cast<uint64_t>(st.num_shared_refs) * bytes_per_block;
  st.prefix_lookup_tokens = counters_.lookup_tokens;
  st.prefix_hit_tokens = counters_.hit_tokens;
  st.num_hash_collisions = counters_.lookup_collisions + static_cast<int64_t>(pool_.num_seal_collisions());
  st.num_lineage_misses = counters_.lookup_lineage + static_cast<int64_t>(pool_.num_seal_lineage_misses());
  st.num_allocations = counters_.allocations;
  st.num_evictions = counters_.evictions;
  st.num_cow_copies = counters_.cow_copies;
  st.num_preemptions = counters_.preemptions;
  st.num_swap_outs = counters_.swap_outs;
  st.num_swap_ins = counters_.swap_ins;
  st.num_reclaims = counters_.reclaims;
  st.disk_hit_tokens = counters_.disk_hit_tokens;
  st.num_disk_reads = counters_.disk_reads;
  st.num_disk_writes = counters_.disk_writes;
  return st;
}

KvSnapshot KvManager::snapshot() const {
  KvSnapshot snap;
  snap.block_size = block_size();
  snap.blocks.resize(num_blocks());
  for (int32_t b = 0; b < num_blocks(); ++b) {
    const Block& blk = pool_.block(b);
    KvBlockInfo& info = snap.blocks[b];
    info.state = pool_.state(b);
    info.ref_count = blk.ref_count;
    info.num_filled = blk.content.num_filled;
    info.has_hash = blk.content.content_id != 0;
    info.in_prefix_cache = blk.registered;
  }
  snap.host_blocks.resize(host_.num_blocks());
  for (int32_t h = 0; h < host_.num_blocks(); ++h) {
    if (!host_.in_use(h)) continue;
    KvBlockInfo& info = snap.host_blocks[h];
    info.state = BlockState::swapped;
    info.ref_count = 1;
    info.num_filled = host_.content(h).num_filled;
    info.has_hash = host_.content(h).content_id != 0;
  }
  for (const auto& [id, s] : seqs_) {
    std::vector<KvBlockInfo>& infos = on_device(s) ? snap.blocks : snap.host_blocks;
    for (int32_t b : s.block_table) infos[b].owners.push_back(id);
  }
  for (auto* infos : {&snap.blocks, &snap.host_blocks})
    for (KvBlockInfo& info : *infos) std::sort(info.owners.begin(), info.owners.end());
  pool_.cached_list().for_each([&](int32_t b) { snap.cached_lru.push_back(b); });
  return snap;
}

}  // namespace pagedchat
