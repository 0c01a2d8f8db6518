#pragma once
// What a vLLM server's KV cache holds, as far as its KV events tell (remote/vllm_kv_events.h):
// every block stored and not yet removed, by hash, each given a slot of its own so that a view
// can draw it in one place for as long as it stays (vLLM's own block ids are not sent). Blocks
// stored on the GPU go to the device slots; any other medium ("CPU", a disk tier of an
// offloading connector) to the host slots. A stored block's chain is its parent's (the blocks
// of one prompt and its later turns), or a new one when vLLM names no parent or one stored before
// we watched. What the events cannot say: which blocks are in use by a running request and which
// merely stay cached, their ref counts, the blocks never hashed (a request's partial last block)
// and the pool's size (so the slots grow as needed). Only the ordering is the publisher's:
// batches are applied in sequence order, with the gaps the subscriber reports.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "remote/vllm_kv_events.h"

namespace pagedchat::remote {

struct VllmMirrorBlock {
  VllmBlockHash hash;
  std::optional<VllmBlockHash> parent;
  int32_t chain = 0;        // 1, 2, ... in the order chains began
  int32_t num_tokens = 0;   // its tokens the event carried (block_size, or fewer when vLLM sent fewer)
  std::vector<int64_t> tokens;
  std::string lora_name;
  int32_t group = -1;       // the KV cache group (hybrid models have several)
};

// One slot's change, for a view's flashes: a block stored into it, or removed from it.
struct VllmMirrorChange {
  enum class Kind { stored, removed } kind = Kind::stored;
  bool host = false;
  int32_t slot = -1;
  int32_t chain = 0;
};

class VllmCacheMirror {
 public:
  // Applies one batch in order; the slots it changed, in order.
  std::vector<VllmMirrorChange> apply(const VllmKvBatch& batch);
  // Everything forgotten (a watch that restarts, a gap the replay could not fill: what the
  // missed batches stored or removed is unknown, so the picture is started again).
  void clear();

  // [slot] the block it holds, or none (a slot freed by a removal, reused by the next store).
  const std::vector<std::optional<VllmMirrorBlock>>& device_slots() const { return device_.held; }
  const std::vector<std::optional<VllmMirrorBlock>>& host_slots() const { return host_.held; }
  int32_t block_size() const { return block_size_; }  // the last BlockStored's; 0 before any
  int64_t num_stored() const { return num_stored_; }    // blocks stored in all
  int64_t num_removed() const { return num_removed_; }
  // Removals of hashes not held: stored before the watch began (or in a batch that was lost).
  int64_t num_unknown_removed() const { return num_unknown_removed_; }
  int64_t num_restored() const { return num_restored_; }  // stores of a hash already held (kept once)
  int32_t num_chains() const { return next_chain_ - 1; }

 private:
  struct Tier {
    std::vector<std::optional<VllmMirrorBlock>> held;
    std::set<int32_t> free;                       // freed slots, lowest reused first
    std::map<std::pair<int32_t, VllmBlockHash>, int32_t> slot_of;  // (group, hash) -> slot
    int32_t take();
  };
  Tier& tier_of(const std::string& medium) { return medium.empty() || medium == "GPU" ? device_ : host_; }

  Tier device_, host_;
  std::map<std::pair<int32_t, VllmBlockHash>, int32_t> chain_of_;  // any tier's block -> its chain
  int32_t block_size_ = 0;
  int32_t next_chain_ = 1;
  int64_t num_stored_ = 0, num_removed_ = 0, num_unknown_removed_ = 0, num_restored_ = 0;
};

}  // namespace pagedchat::remote
