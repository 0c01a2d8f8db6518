#pragma once
// The KV events of a frame told in plain sentences, one line per run of like events: "Chat B's
// prompt finds blocks #1, #2, #3 in the prefix cache: their tokens are not computed again"
// rather than three records of cache_hit. What the event log shows, and what a teacher reads
// out while stepping (issue 16's lessons build on it).

#include <QString>

#include <functional>
#include <vector>

#include "engine/kv/kv_events.h"

struct KvEventLine {
  QString text;
  pagedchat::KvEventKind kind = pagedchat::KvEventKind::allocate;
  pagedchat::SequenceId seq = -1;  // -1: no sequence (an eviction)
  std::vector<int32_t> blocks;      // device blocks named
  std::vector<int32_t> hostBlocks;  // host (swap) blocks named
};

// name(seq): the chat's title as the legend shows it ("Chat B"); empty for a sequence no chat
// owns (it is then called "sequence N"). vllmCache: the events are a vLLM cache's, as
// appcore/remote/vllm_pool_watcher.h draws them (an allocate is a block stored, an evict one removed).
std::vector<KvEventLine> narrateKvEvents(const std::vector<pagedchat::KvEvent>& events,
                                         const std::function<QString(pagedchat::SequenceId)>& name, bool vllmCache = false);
