// Which cells KV events name, and the fading flashes on them.
#include "appcore/pool/kv_flashes.h"

#include <algorithm>
#include <unordered_set>

const char* kvFlashKindName(KvFlashKind kind) {
  switch (kind) {
    case KvFlashKind::CopyOnWrite: return "copy-on-write";
    case KvFlashKind::Evict: return "evict";
    case KvFlashKind::Preempt: return "preempt or reclaim";  // a parked chat's blocks taken back: a preemption too
    case KvFlashKind::SwapOut: return "swap out";
    case KvFlashKind::SwapIn: return "swap in";
    case KvFlashKind::CacheHit: return "cache hit";
    case KvFlashKind::Allocate: return "allocate";
    case KvFlashKind::Free: return "freed";  // the pool panel's state key says "free" of a free block
  }
  return "?";
}

using namespace pagedchat;

std::vector<KvFlashTarget> kvFlashTargets(const std::vector<KvEvent>& events) {
  std::vector<KvFlashTarget> out;
  std::unordered_set<SequenceId> releasing;  // preempted or reclaimed; their frees follow
  auto device = [&](int32_t b, KvFlashKind k) {
    if (b >= 0) out.push_back({b, false, k});
  };
  auto host = [&](int64_t h, KvFlashKind k) {
    if (h >= 0) out.push_back({static_cast<int32_t>(h), true, k});
  };
  for (const KvEvent& e : events) {
    if (e.kind != KvEventKind::free) releasing.erase(e.seq);
    switch (e.kind) {
      case KvEventKind::copy_on_write:
        device(e.block, KvFlashKind::CopyOnWrite);
        device(static_cast<int32_t>(e.peer), KvFlashKind::CopyOnWrite);
        break;
      case KvEventKind::evict: device(e.block, KvFlashKind::Evict); break;
      case KvEventKind::cache_hit: device(e.block, KvFlashKind::CacheHit); break;
      case KvEventKind::swap_out:
        device(e.block, KvFlashKind::SwapOut);
        host(e.peer, KvFlashKind::SwapOut);
        break;
      case KvEventKind::swap_in:
        device(e.block, KvFlashKind::SwapIn);
        host(e.peer, KvFlashKind::SwapIn);
        break;
      case KvEventKind::preempt:
      case KvEventKind::reclaim: releasing.insert(e.seq); break;
      case KvEventKind::free:
        if (releasing.count(e.seq)) {
          if (e.block >= 0) device(e.block, KvFlashKind::Preempt);
          else host(e.peer, KvFlashKind::Preempt);
        }
        break;
      default: break;
    }
  }
  // Then the plain allocations and frees, for the cells no event above marks (a copy's own
  // allocation, the frees a swap-out or a preemption makes).
  std::unordered_set<int64_t> marked;
  for (const KvFlashTarget& t : out) marked.insert(t.host ? -1 - int64_t{t.block} : t.block);
  for (const KvEvent& e : events) {
    if (e.kind != KvEventKind::allocate && e.kind != KvEventKind::free) continue;
    const bool host = e.block < 0;
    const int64_t block = host ? e.peer : e.block;
    if (block < 0 || marked.count(host ? -1 - block : block)) continue;
    out.push_back({static_cast<int32_t>(block), host, e.kind == KvEventKind::allocate ? KvFlashKind::Allocate : KvFlashKind::Free});
  }
  return out;
}

void KvFlashes::add(const std::vector<KvEvent>& events, qint64 nowMs) {
  for (const KvFlashTarget& t : kvFlashTargets(events)) (t.host ? host_ : device_)[t.block] = Flash{t.kind, nowMs};
}

void KvFlashes::expire(qint64 nowMs) {
  for (auto* map : {&device_, &host_})
    std::erase_if(*map, [&](const auto& kv) { return nowMs - kv.second.startMs >= kFadeMs; });
}

double KvFlashes::strength(const Flash& f, qint64 nowMs) {
  const double t = static_cast<double>(nowMs - f.startMs) / kFadeMs;
  return std::clamp(1.0 - t, 0.0, 1.0);
}
