#pragma once
// What the settings dialog edits: sampling defaults for new replies, and the engine's shape
// (applied by reloading the model). Stored as key/value settings in the chat database; the
// keys are written to disk, so they are never renamed.

#include <QString>

#include <vector>

#include "appcore/chat/chat_types.h"
#include "appcore/bridge/engine_bridge.h"

class ChatDatabase;

struct AppSettings {
  TurnSettings sampling;  // numSamples is not a setting (the compare box says it per turn)
  // Compare with "Vary settings": column k's temperature, top-p, top-k and seed (the rest as in
  // sampling). Always kMaxColumns entries.
  static constexpr int kMaxColumns = 4;
  std::vector<TurnSettings> compareColumns = defaultCompareColumns();
  static std::vector<TurnSettings> defaultCompareColumns();
  // The settings of a "Vary settings" turn of n columns.
  TurnSettings variedTurn(int n) const;

  int blockSize = 16;         // tokens per KV block: 1, 4, 8, 16 or 32
  int kvMemoryMiB = 0;        // KV pool budget; 0: room for 4 chats of the context length
  int swapMiB = 0;            // host pool a preempted chat's blocks swap to; 0: preemption recomputes
  // The disk tier: chats' full KV blocks kept on disk (kvDiskFolder()), so a chat reopened after a
  // restart, or whose blocks were evicted, reads its history back instead of computing it. On by
  // default, except under QStandardPaths' test mode (suites would share blocks between runs).
  bool kvDisk = defaultKvDisk();
  int kvDiskMiB = 0;          // its cap; 0: a tenth of the free space there
  static bool defaultKvDisk();
  static QString kvDiskFolder();
  int maxBatchedTokens = 512;  // per engine step
  int threads = 0;            // 0: all cores
  int maxContext = 2048;      // tokens one chat may hold (capped by the model's)
  QString backend = QStringLiteral("cpu");  // "cpu" or "cuda"
  QString kvType = QStringLiteral("f16");   // the CPU pool's element type: "f16", "q8_0" or "f32"
  // Speculative decoding: "off", "ngram" (prompt lookup) or "draft" (draftModel, a GGUF path
  // sharing the model's vocabulary). The reply is the same either way; only its speed changes.
  QString speculation = QStringLiteral("off");
  // "model": the model's own chat template (plain text for a base model, whose file has none);
  // "builtin": the built-in format recognised from it, for a template that refuses our chats
  // (Gemma 2's has no system role); "plain": no chat format, the model continues the text.
  QString chatTemplate = QStringLiteral("model");
  QString draftModel;
  // Teaching: paging made visible. While on, the engine runs with kTeaching* below instead of
  // the block size, pool, context and step budget above (which stay as they were for later).
  bool teachingPreset = false;
  // What a turn does when a chat outgrows the context, for chats that keep the app's default.
  ContextPolicy contextPolicy = ContextPolicy::dropOldest;
  static constexpr int kTeachingBlockSize = 4, kTeachingBlocks = 128, kTeachingContext = 256, kTeachingStepTokens = 32;
  // The teaching preset's pool, as a lesson sets its scene (a pool small enough to run out, a host
  // pool to swap to); not saved: the preset starts at kTeachingBlocks and no host pool.
  int teachingBlocks = kTeachingBlocks;
  int teachingHostBlocks = 0;
  // The teaching preset runs without the disk tier (a lesson's scene must compute what it shows,
  // replay after replay), except the lesson that shows it: on then, in a folder of its own
  // (kvDiskLessonFolder(), emptied at each start of that lesson).
  bool teachingKvDisk = false;
  // Its block size and context, as a lesson sets its scene (the sliding window's needs more than
  // 256 tokens); not saved either.
  int teachingBlockSize = kTeachingBlockSize;
  int teachingContext = kTeachingContext;
  static QString kvDiskLessonFolder();

  static AppSettings load(ChatDatabase& db);
  void save(ChatDatabase& db) const;
  EngineBridge::Config engineConfig() const;
  bool sameEngine(const AppSettings& other) const;  // false: the model must be reloaded
};
