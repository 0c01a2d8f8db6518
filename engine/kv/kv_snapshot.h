#pragma once
// The block pool at one moment, one small record per block: what the visualizer draws.
// Taken by KvManager::snapshot(); owners are sorted by sequence id.

#include <cstdint>
#include <vector>

#include "engine/kv/kv_types.h"

namespace pagedchat {

struct KvBlockInfo {
  BlockState state = BlockState::free;
  int32_t ref_count = 0;         // device blocks; a swapped host block has 1
  int32_t num_filled = 0;        // slots holding tokens
  bool has_hash = false;         // full: its content hash is known
  bool in_prefix_cache = false;  // indexed by the prefix cache (device blocks only)
  bool on_disk = false;          // full, and its copy kept by the disk tier too (Engine::snapshot)
  std::vector<SequenceId> owners;  // sequences whose block table holds it
};

struct KvSnapshot {
  int32_t block_size = 0;
  std::vector<KvBlockInfo> blocks;       // [num_blocks] the device pool
  std::vector<KvBlockInfo> host_blocks;  // [num_host_blocks]
  std::vector<int32_t> cached_lru;       // cached device blocks, least recently used first
};

}  // namespace pagedchat
