#pragma once
// KV events: one record per state change of a block or a sequence, so the visualizer, the
// stats and the CLI's counters can follow paging as it happens. The manager records them; the
// engine drains them each step (take()), or a sink receives each one at once.

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "engine/kv/kv_types.h"

namespace pagedchat {

enum class KvEventKind : uint8_t {
  // Block events: `block` is a device block id, `seq` the sequence concerned.
  allocate,       // a fresh block joins seq's block table
  share,          // seq (a fork child) takes one more reference to an in-use block
  cache_hit,      // seq reuses the block through the prefix cache (shared, or revived from cached);
                  // on swap-in, peer: the host block whose copy it makes unnecessary
  copy_on_write,  // seq's shared partial block; peer: the fresh copy seq writes into instead
  free,           // seq drops its reference; block_state: in_use (still shared), cached or free;
                  // a swapped seq's host block: block -1, peer the host block
  evict,          // a cached block's content is dropped so the block can be reused (seq: -1)
  swap_out,       // seq's device block is copied to host block `peer` (then freed as by `free`)
  swap_in,        // host block `peer` of seq is copied into device block `block`
  // Sequence events: block is -1.
  fork,     // seq: the child; peer: the parent
  park,     // seq stays resident between turns
  resume,   // a parked seq runs again
  reclaim,  // a parked seq released under memory pressure (its full blocks stay cached)
  preempt,  // a running seq freed under pressure, to be recomputed
  finish,   // seq freed by its owner (finished, aborted, or discarded)
  rewind,   // seq cut back to `peer` tokens (its blocks past the cut are freed, one event each)
  // The disk tier (engine/kv/disk): block events again.
  disk_read,   // seq's fresh block `block` takes a full block read from disk (a prefix found there)
  disk_write,  // full block `block` is queued to be written to disk (seq: -1)
};

struct KvEvent {
  KvEventKind kind = KvEventKind::allocate;
  SequenceId seq = -1;
  int32_t block = -1;
  int64_t peer = -1;
  int32_t ref_count = 0;                     // the block's, after the event
  BlockState block_state = BlockState::free;  // the block's, after the event
};

const char* kv_event_name(KvEventKind k);
inline constexpr int kNumKvEventKinds = static_cast<int>(KvEventKind::disk_write) + 1;

class KvEventLog {
 public:
  using Sink = std::function<void(const KvEvent&)>;
  // With a sink, events go to it as they happen and are not kept; without, they are kept
  // until take().
  void set_sink(Sink sink) { sink_ = std::move(sink); }
  void push(const KvEvent& e) {
    if (sink_) sink_(e);
    else pending_.push_back(e);
  }
  std::vector<KvEvent> take() { return std::exchange(pending_, {}); }

 private:
  Sink sink_;
  std::vector<KvEvent> pending_;
};

}  // namespace pagedchat
