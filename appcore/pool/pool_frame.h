#pragma once
// What the KV block-pool view draws, as one value the engine thread builds and sends to the
// UI thread (queued signal, coalesced to the display rate): a snapshot of the pool, the stats,
// the events since the previous frame, and per live sequence its chat, block table and tokens
// (so hovering a block can show the text inside it without touching the engine).

#include <QMetaType>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "appcore/pool/kv_event_text.h"
#include "engine/engine/engine.h"
#include "engine/kv/kv_events.h"
#include "engine/kv/kv_snapshot.h"

struct PoolFrameSequence {
  pagedchat::SequenceId id = -1;
  QString chatTitle;      // the chat (or compare column / API request) the sequence belongs to
  int colorIndex = 0;     // stable per chat: cells of one chat share a colour
  std::vector<int32_t> blockTable;  // logical block -> physical block id
  std::vector<int32_t> tokens;      // the tokens stored, in order
  QString responseId{};  // a remote server's frame: the API response it serves ("chatcmpl-N"), or empty
  int64_t numStored = -1;  // a remote server's frame: its tokens stored, which it does not send; -1: tokens.size()
  // The app's chat the sequence belongs to (a ChatId), -1 for none: the session names it
  // (chatTitle) on the UI thread, where the chat's title lives.
  int64_t chat = -1;
  int64_t storedTokens() const { return numStored >= 0 ? numStored : static_cast<int64_t>(tokens.size()); }
};

// A model with sliding-window attention (Gemma 3): on its local layers a token sees only its
// last `window` positions, so a sequence's blocks wholly before that are read by the global
// layers alone. The pool keeps them (masking only; see docs/DESIGN.md) and the view marks them.
struct PoolFrameWindow {
  int window = 0;  // tokens; 0: no sliding window
  int numLocalLayers = 0;
  int numLayers = 0;
};

// A block the disk tier holds that a chat's history starts with: the pool view's third tier
// (below the host pool), so a chat evicted from memory, or reopened after a restart, can be seen
// waiting on disk. Listed per chat, in order, each block once (a shared system prompt's lists
// every chat it starts).
struct PoolFrameDiskBlock {
  std::vector<int64_t> chats;   // the ChatIds whose histories start with it, in the order met
  QStringList titles;           // their titles: named on the UI thread
  int32_t index = 0;            // its logical block index in those histories
  std::vector<int32_t> tokens;  // what it holds
  int32_t poolBlock = -1;       // the pool's block holding the same tokens now; -1: only on disk
};

struct PoolFrame {
  pagedchat::KvSnapshot snapshot;
  pagedchat::EngineStats stats;
  std::vector<pagedchat::KvEvent> events;  // since the previous frame, oldest first
  // What the engine side tells beside the events (a chat's tool result appended to its
  // sequence), each line's text after its sequence's name ("Chat B" then the text).
  std::vector<KvEventLine> notes;
  // What each step since the previous frame computed, oldest first (at most kMaxSteps: the
  // step timeline draws no more than that).
  static constexpr size_t kMaxSteps = 64;
  std::vector<pagedchat::StepRecord> steps;
  std::vector<PoolFrameSequence> sequences;
  double tokensPerSecond = 0;      // aggregate, over the last second
  int64_t contiguousReservedTokens = 0;  // what one max-context slab per sequence would reserve
  int64_t maxContext = 0;                // tokens one sequence may hold (one such slab)
  int64_t stepIndex = 0;            // engine steps so far
  QString lastStepSummary;          // step mode: what the last step did, in words
  PoolFrameWindow slidingWindow;
  // The disk tier (EngineConfig::kv_disk): the blocks of the chats' histories it holds (at most
  // kMaxDiskBlocks, chat by chat), and how many blocks of this model the folder has in all.
  static constexpr size_t kMaxDiskBlocks = 1024;
  std::vector<PoolFrameDiskBlock> diskBlocks;
  int64_t numDiskModelBlocks = 0;
  bool fromVllmEvents = false;  // a vLLM cache as its KV events tell it (appcore/remote/vllm_pool_watcher.h)
  // Turns token ids into text; safe to call on the UI thread (tokenizers are read-only).
  std::shared_ptr<const std::function<QString(const std::vector<int32_t>&)>> detokenize;
};
Q_DECLARE_METATYPE(PoolFrame)
