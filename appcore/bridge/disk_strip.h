#pragma once
// The pool view's third tier, built on the engine thread: which of the disk tier's blocks the
// chats' histories start with (PoolFrameDiskBlock), from the histories the bridge last rendered
// for each chat. Rebuilt only when a history changed or the disk or the pool moved, at most a few
// times a second: asking the disk about every block of every chat is not free.

#include <QElapsedTimer>

#include <cstdint>
#include <map>
#include <vector>

#include "appcore/pool/pool_frame.h"
#include "engine/engine/engine.h"

class DiskStrip {
 public:
  // The chat's history as its next turn would read it; empty: forget the chat.
  void setHistory(int64_t chat, std::vector<int32_t> tokens);
  void clear();  // another engine: nothing known
  // The blocks for the next frame, and how many of this model's blocks the folder has.
  // poolMoved: the frame carries KV events (blocks evicted or filled).
  void fill(const pagedchat::Engine& engine, bool poolMoved, PoolFrame& frame);

  // The blocks the disk holds of these histories, chat by chat (ascending ChatId), each block
  // once, at most `max`; poolBlocks: content hash -> the pool's block holding it.
  static std::vector<PoolFrameDiskBlock> build(const pagedchat::Engine& engine, const std::map<int64_t, std::vector<int32_t>>& histories,
                                               size_t max);

 private:
  std::map<int64_t, std::vector<int32_t>> m_histories;
  bool m_changed = true;
  int64_t m_diskCounts = -1;  // the disk's counters when last built
  std::vector<PoolFrameDiskBlock> m_blocks;
  QElapsedTimer m_built;
};
