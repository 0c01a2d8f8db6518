#pragma once
// Builds the PoolFrame values the bridge sends to the block-pool view, on the engine thread:
// the KV events since the previous frame, the snapshot and stats, each resident sequence's
// block table and tokens labelled with its chat, and the aggregate tokens/s. Also says in
// words what one step did (step mode), from that step's events and the stats before/after.

#include <QElapsedTimer>
#include <QString>

#include <deque>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "engine/engine/engine.h"
#include "appcore/pool/pool_frame.h"

class PoolFrameBuilder {
 public:
  using Detokenize = std::shared_ptr<const std::function<QString(const std::vector<int32_t>&)>>;
  // Who owns a sequence: a chat of the app (its ChatId; the session names it), else a name
  // (an API request's); and its colour.
  struct Label {
    int64_t chat = -1;
    QString title;
    int colorIndex = -1;
  };
  using SequenceLabel = std::function<Label(pagedchat::SequenceId)>;

  void reset(Detokenize detokenize, int64_t maxContext, PoolFrameWindow window = {});
  void onKvEvent(const pagedchat::KvEvent& e);  // engine thread, inside step()
  size_t numPendingEvents() const { return m_events.size(); }  // for the next frame
  void addNote(KvEventLine note) { m_notes.push_back(std::move(note)); }  // for the next frame (PoolFrame::notes)
  void onStep(const pagedchat::StepRecord& step);  // engine thread, after each step: the timeline's
  // Marks the start of a step (for the step summary).
  void beginStep(const pagedchat::EngineStats& before);
  // What the step begun last did: sequences that sampled, tokens computed, blocks moved.
  QString describeStep(const pagedchat::EngineStats& after, int numSequencesSampled) const;
  PoolFrame build(const pagedchat::Engine& engine, const SequenceLabel& label, const QString& stepSummary);

 private:
  double tokensPerSecond(int64_t numGenerated);

  Detokenize m_detokenize;
  int64_t m_maxContext = 0;
  PoolFrameWindow m_window;
  std::vector<pagedchat::KvEvent> m_events;      // since the last frame
  std::vector<KvEventLine> m_notes;              // since the last frame
  std::vector<pagedchat::KvEvent> m_stepEvents;  // since beginStep
  std::vector<pagedchat::StepRecord> m_steps;    // since the last frame
  pagedchat::EngineStats m_beforeStep;
  std::deque<std::pair<double, int64_t>> m_generatedAt;  // (seconds, num_generated), last ~1 s
  QElapsedTimer m_clock;
};
