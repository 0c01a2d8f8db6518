#pragma once
// Runs an engine to the end while recording what each request produced, checking the KV
// manager's invariants after every step: the loop the engine suites share.

#include <QtTest>

#include <map>
#include <string>
#include <vector>

#include "engine/engine/engine.h"

namespace pagedchat::test {

struct EngineRecord {
  std::map<RequestId, std::vector<std::vector<int32_t>>> tokens;  // per request, per sample
  std::map<RequestId, std::vector<std::string>> text;             // per request, per sample
  std::map<RequestId, std::string> finish;                        // finish reasons, concatenated
  std::map<RequestId, SequenceId> parked;                         // a parked sample's sequence
  int64_t kv_frees = 0;                                           // KV free events

  // Subscribes to the engine (for its whole life); an error event fails the test run.
  void listen(Engine& engine) {
    engine.subscribe([this](const EngineEvent& e) {
      if (e.kind == EngineEventKind::error) qFatal("engine error: %s", e.reason.c_str());
      if (e.kind == EngineEventKind::kv) {
        if (e.kv.kind == KvEventKind::free) ++kv_frees;
        return;
      }
      auto& samples = tokens[e.request];
      auto& texts = text[e.request];
      if (samples.size() <= static_cast<size_t>(e.index)) samples.resize(e.index + 1);
      if (texts.size() <= static_cast<size_t>(e.index)) texts.resize(e.index + 1);
      texts[static_cast<size_t>(e.index)] += e.text;
      if (e.kind == EngineEventKind::token) samples[static_cast<size_t>(e.index)].push_back(e.token);
      if (e.kind == EngineEventKind::finished) {
        finish[e.request] += e.reason;
        if (e.parked) parked[e.request] = e.seq;
      }
    });
  }
};

// Steps until the engine is idle; the KV manager's invariants hold after every step.
inline void run_to_end(Engine& engine, int max_steps = 20000) {
  for (int steps = 0; engine.step();) {
    if (std::string bad = engine.kv().check_invariants(); !bad.empty()) qFatal("KV invariant broken: %s", bad.c_str());
    if (++steps > max_steps) qFatal("the engine did not finish in %d steps", max_steps);
  }
}

}  // namespace pagedchat::test
