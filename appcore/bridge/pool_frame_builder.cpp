// PoolFrame values for the block-pool view, built on the engine thread between steps.
#include "appcore/bridge/pool_frame_builder.h"

#include <QObject>

#include <set>
#include <tuple>

void PoolFrameBuilder::reset(Detokenize detokenize, int64_t maxContext, PoolFrameWindow window) {
  m_detokenize = std::move(detokenize);
  m_maxContext = maxContext;
  m_window = window;
  m_events.clear();
  m_stepEvents.clear();
  m_generatedAt.clear();
  m_clock.start();
}

void PoolFrameBuilder::onKvEvent(const pagedchat::KvEvent& e) {
  m_events.push_back(e);
  m_stepEvents.push_back(e);
}

void PoolFrameBuilder::beginStep(const pagedchat::EngineStats& before) {
  m_beforeStep = before;
  m_stepEvents.clear();
}

QString PoolFrameBuilder::describeStep(const pagedchat::EngineStats& after, int numSequencesSampled) const {
  using K = pagedchat::KvEventKind;
  const pagedchat::EngineStats& b = m_beforeStep;
  if (after.num_steps == b.num_steps && m_stepEvents.empty())
    return QObject::tr("step: nothing to run (no sequence waiting or running)");
  int allocated = 0, shared = 0, hits = 0, cow = 0, freed = 0, evicted = 0, swappedOut = 0, swappedIn = 0;
  std::set<pagedchat::SequenceId> preempted;
  for (const auto& e : m_stepEvents) {
    switch (e.kind) {
      case K::allocate: ++allocated; break;
      case K::share: ++shared; break;
      case K::cache_hit: ++hits; break;
      case K::copy_on_write: ++cow; break;
      case K::free: ++freed; break;
      case K::evict: ++evicted; break;
      case K::swap_out: ++swappedOut; break;
      case K::swap_in: ++swappedIn; break;
      case K::preempt: preempted.insert(e.seq); break;
      default: break;
    }
  }
  const int64_t prefill = after.num_prefill_tokens - b.num_prefill_tokens;
  const int64_t decode = after.num_decode_tokens - b.num_decode_tokens;
  const int64_t recomputed = after.num_recomputed_tokens - b.num_recomputed_tokens;
  QString s = QObject::tr("step %1: %2 tokens computed (%3 prompt, %4 decode, %5 recomputed); %6 sequences sampled a token")
                  .arg(after.num_steps)
                  .arg(prefill + decode + recomputed)
                  .arg(prefill)
                  .arg(decode)
                  .arg(recomputed)
                  .arg(numSequencesSampled);
  s += QObject::tr("; blocks: %1 allocated, %2 shared, %3 prefix-cache hits, %4 copied on write, %5 freed, %6 evicted, "
                   "%7 swapped out, %8 swapped in; %9 preempted")
           .arg(allocated).arg(shared).arg(hits).arg(cow).arg(freed).arg(evicted).arg(swappedOut).arg(swappedIn)
           .arg(preempted.size());
  return s;
}

double PoolFrameBuilder::tokensPerSecond(int64_t numGenerated) {
  const double now = m_clock.elapsed() / 1000.0;
  m_generatedAt.emplace_back(now, numGenerated);
  while (m_generatedAt.size() > 2 && now - m_generatedAt.front().first > 1.0) m_generatedAt.pop_front();
  const auto& [t0, n0] = m_generatedAt.front();
  return now - t0 > 1e-3 ? static_cast<double>(numGenerated - n0) / (now - t0) : 0.0;
}

void PoolFrameBuilder::onStep(const pagedchat::StepRecord& step) {
  if (step.empty()) return;
  // The step timeline draws the last kMaxSteps; a frame never needs to carry more.
  if (m_steps.size() >= PoolFrame::kMaxSteps) m_steps.erase(m_steps.begin());
  m_steps.push_back(step);
}

PoolFrame PoolFrameBuilder::build(const pagedchat::Engine& engine, const SequenceLabel& label,
                                  const QString& stepSummary) {
  PoolFrame f;
  f.snapshot = engine.snapshot();
  f.stats = engine.stats();
  f.events = std::exchange(m_events, {});
  f.notes = std::exchange(m_notes, {});
  f.steps = std::exchange(m_steps, {});
  f.maxContext = m_maxContext;
  f.stepIndex = f.stats.num_steps;
  f.lastStepSummary = stepSummary;
  f.tokensPerSecond = tokensPerSecond(f.stats.num_generated);
  f.detokenize = m_detokenize;
  f.slidingWindow = m_window;
  // Every sequence that holds a device block or a host one (swapped out), ours or not (an API
  // request's): a swapped chat keeps its name in the legend and the sentences.
  std::set<pagedchat::SequenceId> seqs;
  for (const auto& b : f.snapshot.blocks) seqs.insert(b.owners.begin(), b.owners.end());
  for (const auto& b : f.snapshot.host_blocks) seqs.insert(b.owners.begin(), b.owners.end());
  for (pagedchat::SequenceId id : seqs) {
    std::optional<pagedchat::SequenceView> view = engine.sequence(id);
    if (!view) continue;
    PoolFrameSequence s;
    s.id = id;
    Label who = label(id);
    s.chat = who.chat;
    s.chatTitle = std::move(who.title);
    s.colorIndex = who.colorIndex;
    s.blockTable = std::move(view->block_table);
    s.tokens = engine.stored_tokens(id);
    f.sequences.push_back(std::move(s));
  }
  f.contiguousReservedTokens = static_cast<int64_t>(f.sequences.size()) * m_maxContext;
  return f;
}
