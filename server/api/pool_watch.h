#pragma once
// The KV pool as a remote client watches it (GET /v1/kv/events, a stream of these frames as
// server-sent events; GET /v1/kv/snapshot, one): after each engine step with KV events, the
// step's events, the whole pool's snapshot and every resident sequence's block table, with the
// API request it belongs to. A teacher runs the server on the GPU box and the class's apps draw
// its pool (appcore/remote/remote_pool_watcher.h reads the same JSON).
//
// JSON, one object a frame:
//   {"step": N, "block_size": B,
//    "blocks": [{"s": "free"|"in_use"|"cached", "r": ref_count, "f": filled, "h": 0|1, "p": 0|1, "o": [seq, ...]}, ...],
//    "host_blocks": [same], "cached_lru": [block, ...],
//    "sequences": [{"id": seq, "request": id or -1, "response": "chatcmpl-N" or "", "stored": tokens,
//                   "table": [block, ...]}, ...],
//    "events": [{"kind": "allocate"|..., "seq": s, "block": b, "peer": p, "ref": r, "state": "..."}, ...]}
// Kinds and states are the engine's own names (kv_event_name, block_state_name).

#include <QByteArray>
#include <QString>

#include <mutex>
#include <vector>

#include "engine/engine/request.h"
#include "engine/kv/kv_events.h"
#include "engine/kv/kv_snapshot.h"

struct PoolWatchSequence {
  pagedchat::SequenceId id = -1;
  pagedchat::RequestId request = -1;  // the API request it serves; -1: none (the app's chat)
  int32_t num_stored = 0;
  std::vector<int32_t> block_table;
  QString response;  // the API's id of that request ("chatcmpl-N"), which its client knows
};

struct PoolWatchFrame;
QByteArray poolWatchJson(const PoolWatchFrame& frame);

struct PoolWatchFrame {
  int64_t step = 0;
  std::vector<pagedchat::KvEvent> events;  // since the previous frame
  pagedchat::KvSnapshot snapshot;
  std::vector<PoolWatchSequence> sequences;
  // Its JSON, written once however many watchers send it (any thread).
  const QByteArray& json() const {
    std::call_once(json_once_, [this] { json_ = poolWatchJson(*this); });
    return json_;
  }

 private:
  mutable std::once_flag json_once_;
  mutable QByteArray json_;
};
