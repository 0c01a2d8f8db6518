#pragma once
// Numbers about the KV pool at one moment (gauges) and since the manager was made
// (counters), for the stats panel and the CLI. Computed by KvManager::stats().

#include <cstdint>

namespace pagedchat {

struct KvStats {
  // Gauges.
  int32_t block_size = 0;
  int32_t num_blocks = 0;
  int32_t num_used_blocks = 0;    // ref_count >= 1
  int32_t num_cached_blocks = 0;  // ref_count 0, content kept
  int32_t num_free_blocks = 0;
  int32_t num_host_blocks = 0;
  int32_t num_swapped_blocks = 0;  // host blocks in use
  int32_t num_running = 0, num_parked = 0, num_swapped = 0;  // sequences
  int64_t num_tokens_stored = 0;    // filled slots of in-use device blocks, each block once
  int64_t num_empty_slots = 0;      // internal fragmentation: unfilled slots of in-use blocks
  int32_t num_shared_blocks = 0;    // in-use blocks with ref_count > 1
  int64_t num_shared_refs = 0;      // sum over blocks of (ref_count - 1): blocks sharing saved
  uint64_t bytes_per_block = 0;         // in the backend's KV element type (0: not known)
  uint64_t bytes_saved_by_sharing = 0;  // num_shared_refs * bytes_per_block

  // Counters.
  int64_t prefix_lookup_tokens = 0;  // prompt tokens of the sequences started
  int64_t prefix_hit_tokens = 0;     // of which served by the prefix cache
  int64_t num_hash_collisions = 0;   // index hits refused: other tokens or parent (lookups and seals)
  int64_t num_lineage_misses = 0;    // index hits refused: same tokens after another copy of the prefix
  int64_t num_allocations = 0;       // blocks taken for new content (COW and swap-in included)
  int64_t num_evictions = 0;
  int64_t num_cow_copies = 0;
  int64_t num_preemptions = 0;  // by recompute
  int64_t num_swap_outs = 0;    // sequences
  int64_t num_swap_ins = 0;     // sequences
  int64_t num_reclaims = 0;     // parked sequences released under pressure
  int64_t disk_hit_tokens = 0;   // prompt tokens served by blocks read from disk (not in prefix_hit_tokens)
  int64_t num_disk_reads = 0;    // blocks read from disk into the pool
  int64_t num_disk_writes = 0;   // blocks queued to be written to disk

  // prefix_hit_tokens / prefix_lookup_tokens; 0 before any lookup.
  double prefix_hit_rate() const {
    return prefix_lookup_tokens ? static_cast<double>(prefix_hit_tokens) / prefix_lookup_tokens : 0.0;
  }
  // Unfilled share of the in-use slots.
  double fragmentation() const {
    int64_t num_slots = static_cast<int64_t>(num_used_blocks) * block_size;
    return num_slots ? static_cast<double>(num_empty_slots) / num_slots : 0.0;
  }
};

}  // namespace pagedchat
