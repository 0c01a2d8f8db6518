#pragma once
// Names shared by the KV manager's files: sequence ids, block and sequence states, and the
// bookkeeping a full block carries for the prefix cache (on the device or in the host pool).

#include <cstdint>

namespace pagedchat {

using SequenceId = int64_t;

enum class BlockState : uint8_t {
  free,     // empty, on the free list
  in_use,   // ref_count >= 1: in at least one block table
  cached,   // ref_count 0, full, content kept for the prefix cache; evictable (LRU)
  swapped,  // a host-pool block holding a swapped-out sequence's KV
};

enum class SequenceState : uint8_t {
  running,  // on the device, in the batch
  parked,   // on the device between turns; released first under pressure
  swapped,  // in the host pool; swap_in() brings it back
};

// How the manager frees a running sequence under pressure.
enum class PreemptMode : uint8_t {
  recompute,  // free its blocks; it re-prefills later (its full blocks stay cached meanwhile)
  swap,       // copy its blocks to the host pool (needs host blocks; else recompute)
};

// What a block's content is. A full block gets a hash (hash_fn(parent_hash, tokens)) and a
// content id. Two blocks share a content id only if their whole token prefixes are equal, so
// equal ids mean equal KV whatever the hash does; the prefix cache serves a block only when its
// parent's content id and its own token ids match the request (a hash collision is a miss).
// The converse does not hold: a prefix computed again after its first copy was evicted gets a
// new id, so a block computed after the first copy is not served after the second one.
struct BlockContent {
  int32_t num_filled = 0;          // token slots written, 0..block_size
  uint64_t hash = 0;               // when full
  uint64_t parent_hash = 0;        // when full: the previous block's hash, or the root hash
  uint64_t content_id = 0;         // when full (never 0 then); 0 while partial
  uint64_t parent_content_id = 0;  // when full: the previous block's content id, 0 for the first
};

const char* block_state_name(BlockState s);
const char* sequence_state_name(SequenceState s);

}  // namespace pagedchat
