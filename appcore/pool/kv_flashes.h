#pragma once
// Cells that flash when a KV event touches them (copy-on-write, evict, preempt, swap out/in,
// cache hit, and plain allocate and free where nothing else marks the cell), fading out over
// kFadeMs (held while the engine is paused: KvPoolView::setFlashesHeld). Time is passed in (milliseconds on any steady clock), so
// the fade is testable without waiting; the view repaints only while a flash is live.

#include <QtGlobal>

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "engine/kv/kv_events.h"

// The event kinds the view flashes, one colour each (ui/pool_view/kv_cell_colors.h).
enum class KvFlashKind : uint8_t { CopyOnWrite, Evict, Preempt, SwapOut, SwapIn, CacheHit, Allocate, Free };
inline constexpr int kNumKvFlashKinds = 8;
const char* kvFlashKindName(KvFlashKind kind);

struct KvFlashTarget {
  int32_t block = -1;
  bool host = false;  // a host (swap) block
  KvFlashKind kind = KvFlashKind::CacheHit;
};

// The cells the events name, in event order. A preempted (or reclaimed) sequence's blocks are
// named by the free events that follow its preempt event; a swap names both the device and
// the host block; a copy-on-write both the shared block and its fresh copy.
std::vector<KvFlashTarget> kvFlashTargets(const std::vector<pagedchat::KvEvent>& events);

class KvFlashes {
 public:
  static constexpr int kFadeMs = 600;

  struct Flash {
    KvFlashKind kind = KvFlashKind::CacheHit;
    qint64 startMs = 0;
  };

  // Starts (or restarts) a flash on every cell the events name.
  void add(const std::vector<pagedchat::KvEvent>& events, qint64 nowMs);
  // Drops the flashes that have faded out by nowMs.
  void expire(qint64 nowMs);
  bool empty() const { return device_.empty() && host_.empty(); }
  size_t size() const { return device_.size() + host_.size(); }
  void clear() { device_.clear(), host_.clear(); }
  // Every flash starts again at nowMs (held marks let go: they fade from now).
  void restart(qint64 nowMs) {
    for (auto* map : {&device_, &host_})
      for (auto& [block, flash] : *map) flash.startMs = nowMs;
  }

  const std::unordered_map<int32_t, Flash>& device() const { return device_; }
  const std::unordered_map<int32_t, Flash>& host() const { return host_; }
  // 1 when the flash starts, falling to 0 at kFadeMs.
  static double strength(const Flash& f, qint64 nowMs);

 private:
  std::unordered_map<int32_t, Flash> device_;  // block id -> flash
  std::unordered_map<int32_t, Flash> host_;    // host block id -> flash
};
