#pragma once
// The pool view's third tier, built on the engine thread: which of the disk tier's blocks the
// chats' histories start with (PoolFrameDiskBlock), from the histories the bridge last rendered
// for each chat. Asking the disk about every block of every chat is not free (a lock each), so
// it is rebuilt only when a history, the disk's counters or the pool changed, and at most
// every kMinRebuildMs; a change seen sooner leaves a rebuild pending, which the bridge sends a
// frame for once due (an idle engine sends no frame of its own).

#include <QElapsedTimer>

#include <cstdint>
#include <map>
#include <vector>

#include "appcore/pool/pool_frame.h"
#include "engine/engine/engine.h"

class DiskStrip {
 public:
  static constexpr int kMinRebuildMs = 250;

  // The chat's history as its next turn would read it; empty: forget the chat. Whether the
  // strip may change with it (the caller sends a frame: an idle engine sends none).
  bool setHistory(int64_t chat, std::vector<int32_t> tokens);
  void clear();  // another engine: nothing known
  // The blocks for the next frame, and how many of this model's blocks the folder has.
  // poolMoved: the frame carries KV events (blocks evicted or filled). Returns whether a
  // rebuild is still pending (not due yet): the caller sends a frame in kMinRebuildMs.
  bool fill(const pagedchat::Engine& engine, bool poolMoved, PoolFrame& frame);

 private:
  struct History {
    std::vector<int32_t> tokens;
    std::vector<uint64_t> hashes;  // its full blocks' prefix hashes; computed at the next build
    uint64_t order = 0;            // when it was last set: the most recent chats are listed first
  };
  // What moves the strip on the disk's side.
  struct DiskCounts {
    int64_t written = -1, read = 0, refused = 0, evicted = 0, own = 0;
    bool operator==(const DiskCounts&) const = default;
  };
  void build(const pagedchat::Engine& engine);

  std::map<int64_t, History> m_histories;
  uint64_t m_nextOrder = 0;
  bool m_pending = true;  // something changed since the last build
  DiskCounts m_counts;    // when last built
  std::vector<PoolFrameDiskBlock> m_blocks;
  QElapsedTimer m_built;
};
