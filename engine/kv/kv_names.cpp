// Display names of the KV manager's enums (events, block and sequence states).
#include "engine/kv/kv_events.h"
#include "engine/kv/kv_types.h"

namespace pagedchat {

const char* block_state_name(BlockState s) {
  switch (s) {
    case BlockState::free: return "free";
    case BlockState::in_use: return "in_use";
    case BlockState::cached: return "cached";
    case BlockState::swapped: return "swapped";
  }
  return "?";
}

const char* sequence_state_name(SequenceState s) {
  switch (s) {
    case SequenceState::running: return "running";
    case SequenceState::parked: return "parked";
    case SequenceState::swapped: return "swapped";
  }
  return "?";
}

const char* kv_event_name(KvEventKind k) {
  switch (k) {
    case KvEventKind::allocate: return "allocate";
    case KvEventKind::share: return "share";
    case KvEventKind::cache_hit: return "cache_hit";
    case KvEventKind::copy_on_write: return "copy_on_write";
    case KvEventKind::free: return "free";
    case KvEventKind::evict: return "evict";
    case KvEventKind::swap_out: return "swap_out";
    case KvEventKind::swap_in: return "swap_in";
    case KvEventKind::fork: return "fork";
    case KvEventKind::park: return "park";
    case KvEventKind::resume: return "resume";
    case KvEventKind::reclaim: return "reclaim";
    case KvEventKind::preempt: return "preempt";
    case KvEventKind::finish: return "finish";
    case KvEventKind::rewind: return "rewind";
    case KvEventKind::disk_read: return "disk_read";
    case KvEventKind::disk_write: return "disk_write";
  }
  return "?";
}

}  // namespace pagedchat
