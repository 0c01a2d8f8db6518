// The request tracker (engine/engine/request_tracker.h) builds, from the engine's events, what
// each client used to rebuild by itself: per request, each sample's tokens and text, its
// finish, the error, the prefix-cache figure, and one done. Checked against the raw event
// stream of the same run, on random-weight models (no file): a request of n samples, one the
// engine refuses, one aborted midway, one whose prompt is served by the prefix cache, a failed
// forward pass, and requests the tracker does not track.

#include <QtTest>

#include <map>
#include <memory>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/engine/engine.h"
#include "engine/engine/request_tracker.h"
#include "engine/model/random_model.h"
#include "support/failing_backend.h"

using namespace pagedchat;
using pagedchat::test::FailingBackend;

namespace {

Request prompt(int n_tokens, int max_tokens, int first = 5) {
  Request r;
  for (int i = 0; i < n_tokens; ++i) r.prompt.push_back(first + i % 200);
  r.params.max_tokens = max_tokens;
  r.params.ignore_eos = true;
  return r;
}

// Every non-KV event by request, and the cache hits before each request's first token.
struct RawEvents {
  std::map<RequestId, std::vector<EngineEvent>> by_request;
  std::map<RequestId, int64_t> hits;
  std::map<RequestId, bool> sampled;
  void attach(Engine& e) {
    e.subscribe([this](const EngineEvent& ev) {
      if (ev.request < 0) return;
      if (ev.kind == EngineEventKind::kv) {
        if (ev.kv.kind == KvEventKind::cache_hit && !sampled[ev.request]) ++hits[ev.request];
        return;
      }
      if (ev.kind == EngineEventKind::token) sampled[ev.request] = true;
      by_request[ev.request].push_back(ev);
    });
  }
};


}  // namespace

class TestRequestTracker : public QObject {
  Q_OBJECT

  std::unique_ptr<Model> model_ = make_random_model("tiny", 11, 1);
  std::unique_ptr<CpuBackend> cpu_ = std::make_unique<CpuBackend>(model_->weights, 1);

  // The tracker's output equals what the raw events say, sample by sample.
  void compareWithEvents(const RequestOutput& out, const std::vector<EngineEvent>& events) {
    std::map<int, SampleOutput> want;
    std::string error;
    int num_done = 0;
    for (const EngineEvent& e : events) {
      num_done += e.request_done;
      if (e.kind == EngineEventKind::error) {
        error = e.reason;
        continue;
      }
      SampleOutput& s = want[e.index];
      s.seq = e.seq;
      s.text += e.text;
      if (e.kind == EngineEventKind::token) s.tokens.push_back(e.token);
      else s.finish_reason = e.reason, s.parked = e.parked;
    }
    QCOMPARE(num_done, 1);  // exactly one request_done, on the last event
    QVERIFY(events.back().request_done);
    QVERIFY(out.done);
    QCOMPARE(out.error, error);
    for (const auto& [i, s] : want) {
      QVERIFY(i < static_cast<int>(out.samples.size()));
      const SampleOutput& got = out.samples[static_cast<size_t>(i)];
      QCOMPARE(got.seq, s.seq);
      QCOMPARE(got.tokens, s.tokens);
      QCOMPARE(got.text, s.text);
      QCOMPARE(got.finish_reason, s.finish_reason);
      QCOMPARE(got.parked, s.parked);
      QCOMPARE(got.finished, true);
      QVERIFY(got.first_token_at >= 0 && got.last_token_at >= got.first_token_at);
    }
  }

 private slots:
  void outputsEqualTheEventStream() {
    EngineConfig c;
    c.block_size = 4;
    c.num_blocks = 256;
    Engine engine(*model_, *cpu_, c);
    RawEvents raw;
    raw.attach(engine);
    RequestTracker tracker(engine);
    Request three = prompt(9, 6);
    three.n = 3;
    three.params.temperature = 1.0f;
    Request refused = prompt(0, 4);  // an empty prompt
    Request stopped = prompt(7, 400);
    Request untracked = prompt(5, 3, 40);
    const RequestId a = engine.submit(three), b = engine.submit(refused), d = engine.submit(stopped);
    engine.submit(untracked);
    for (RequestId id : {a, b, d}) tracker.track(id, id == a ? 3 : 1);
    std::map<RequestId, int> doneUpdates;
    for (int step = 0; engine.step() || step == 0; ++step) {
      if (step == 3) engine.abort(d);
      for (const RequestUpdate& u : tracker.take_updates()) {
        QVERIFY(!u.events.empty());
        for (const EngineEvent& e : u.events) QCOMPARE(e.request, u.id);
        doneUpdates[u.id] += u.done;
      }
    }
    for (const RequestUpdate& u : tracker.take_updates()) doneUpdates[u.id] += u.done;
    QCOMPARE(tracker.tracked(), (std::vector<RequestId>{a, b, d}));  // kept until forgotten
    for (RequestId id : {a, b, d}) {
      QCOMPARE(doneUpdates[id], 1);
      compareWithEvents(tracker.take_output(id), raw.by_request[id]);
    }
    QVERIFY(tracker.tracked().empty());
  }

  void cachedPromptTokensAreTheHitsBeforeTheFirstToken() {
    EngineConfig c;
    c.block_size = 4;
    c.num_blocks = 256;
    Engine engine(*model_, *cpu_, c);
    RawEvents raw;
    raw.attach(engine);
    RequestTracker tracker(engine);
    const RequestId first = engine.submit(prompt(18, 2));
    tracker.track(first, 1);
    while (engine.step()) {}
    const RequestId again = engine.submit(prompt(18, 2));  // the same prompt: 4 full blocks cached
    tracker.track(again, 1);
    while (engine.step()) {}
    QCOMPARE(tracker.output(first)->num_cached_prompt_tokens, int64_t{0});
    QCOMPARE(tracker.output(again)->num_cached_prompt_tokens, int64_t{16});
    QCOMPARE(tracker.output(again)->num_cached_prompt_tokens, raw.hits[again] * c.block_size);
  }

  void aFailedStepEndsEveryTrackedRequestOnce() {
    FailingBackend failing(*cpu_);
    EngineConfig c;
    c.block_size = 4;
    c.num_blocks = 256;
    Engine engine(*model_, failing, c);
    RequestTracker tracker(engine);
    Request two = prompt(6, 50);
    two.n = 2;
    const RequestId a = engine.submit(two), b = engine.submit(prompt(5, 50));
    tracker.track(a, 2);
    tracker.track(b, 1);
    engine.step();
    engine.step();
    failing.fail_next = true;
    engine.step();  // the engine reports it: an error, then each sample finishes "error"
    for (RequestId id : {a, b}) {
      const RequestOutput* out = tracker.output(id);
      QVERIFY(out && out->done);
      QVERIFY2(out->error.find("device lost") != std::string::npos, out->error.c_str());
    }
    // A failure the engine does not see (its step threw): fail() ends the request once.
    const RequestId d = engine.submit(prompt(5, 50));
    tracker.track(d, 1);
    engine.step();
    tracker.take_updates();
    tracker.fail_all("the engine step failed: out of memory");
    engine.abort(d);
    while (engine.step()) {}
    std::vector<RequestUpdate> updates = tracker.take_updates();
    QCOMPARE(updates.size(), size_t{1});
    QCOMPARE(updates[0].id, d);
    QVERIFY(updates[0].done);
    QCOMPARE(updates[0].events.size(), size_t{1});  // the error; the abort's finish is ignored
    QCOMPARE(tracker.output(d)->error, std::string("request ") + std::to_string(d) + ": the engine step failed: out of memory");
  }
};

QTEST_APPLESS_MAIN(TestRequestTracker)
#include "test_request_tracker.moc"
