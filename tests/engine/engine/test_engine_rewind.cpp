// Rewind and fork at any token (Engine::rewind, Engine::fork(seq, at_token)) on the real
// default model. The promise: a continuation after a parked sequence is cut back to token k,
// or from a child forked at token k, replies exactly as the same tokens submitted fresh to an
// engine with an empty cache (greedy, and seeded sampling), and computes nothing but its new
// tokens; at block sizes 1, 4, 16 and 32, with k inside a block and on a block boundary. The
// fork shares every block up to the cut (the partial block at the cut copied on its first
// write, once), and the parent is untouched. Again on gpt-oss's layers (a random tiny-oss: a
// window of 16 on every other layer, which the cuts and the continuations cross).

#include <QtTest>

#include <map>
#include <memory>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/engine/engine.h"
#include "engine/engine/request_tracker.h"
#include "engine/chat/chat_model.h"
#include "engine/model/model.h"
#include "engine/model/random_model.h"
#include "support/test_env.h"

using namespace pagedchat;

namespace {

SamplingParams sampling(bool seeded, int max_tokens) {
  SamplingParams p;
  p.temperature = seeded ? 0.8f : 0.0f;
  p.seed = 7;
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  return p;
}

// Submits and steps to the end; the reply's tokens.
std::vector<int32_t> run(Engine& engine, RequestTracker& tracker, Request r) {
  const RequestId id = engine.submit(std::move(r));
  tracker.track(id, 1);
  while (engine.step()) {}
  RequestOutput out = tracker.take_output(id);
  if (!out.ok()) qWarning("%s", out.error.c_str());
  return out.samples[0].tokens;
}

}  // namespace

class TestEngineRewind : public QObject {
  Q_OBJECT

  struct Subject {
    std::unique_ptr<Model> model;
    std::unique_ptr<CpuBackend> backend;
    std::vector<int32_t> prompt, next;
  };
  std::map<QString, Subject> subjects_;

  Subject& subject() {
    QFETCH_GLOBAL(QString, model);
    return subjects_.at(model);
  }

  static EngineConfig config(int block_size) {
    EngineConfig c;
    c.block_size = block_size;
    c.num_blocks = 4096 / block_size;
    c.max_context = 512;
    return c;
  }

  // The reference: `tokens` then the subject's `next` submitted fresh, to an engine with an empty cache.
  std::vector<int32_t> fresh(int block_size, std::vector<int32_t> tokens, bool seeded) {
    Subject& s = subject();
    Engine engine(*s.model, *s.backend, config(block_size));
    RequestTracker tracker(engine);
    Request r;
    r.prompt = std::move(tokens);
    r.prompt.insert(r.prompt.end(), s.next.begin(), s.next.end());
    r.params = sampling(seeded, 10);
    return run(engine, tracker, r);
  }

 private slots:
  void initTestCase_data() {
    QTest::addColumn<QString>("model");
    QTest::newRow("default model") << "default";
    QTest::newRow("gpt-oss's layers") << "tiny-oss";
  }

  void initTestCase() {
    PC_REQUIRE_ENV(path, "PAGEDCHAT_TEST_MODEL");
    Subject& d = subjects_["default"];
    d.model = Model::load(path);
    const ChatModel chat(*d.model, ChatModel::own_template(*d.model));
    d.backend = std::make_unique<CpuBackend>(d.model->weights, 2);
    // Long enough that the cuts of the 32-token blocks (up to token 81) fall inside the prompt.
    d.prompt = chat.encode_chat({{"system", "You are a helpful assistant who answers in full sentences. You describe places "
                                              "with care: their light, their sounds, the weather around them, and the people "
                                              "who keep them, and you never invent facts about real places. When you are unsure of "
                                              "something you say so plainly, and you keep every answer to a few short paragraphs "
                                              "that a reader can follow without a map."},
                                   {"user", "Describe a lighthouse at night."}});
    QVERIFY(d.prompt.size() > 82);
    d.next = d.model->tokenizer->encode("<|im_end|>\n<|im_start|>user\nAnd in the morning?<|im_end|>\n<|im_start|>assistant\n",
                                        false, true);
    // The same tokens for the random model, taken modulo its vocabulary.
    Subject& o = subjects_["tiny-oss"];
    o.model = make_random_model("tiny-oss", 13, 2);
    o.backend = std::make_unique<CpuBackend>(o.model->weights, 2);
    for (const auto& [from, to] : {std::pair{&d.prompt, &o.prompt}, {&d.next, &o.next}})
      for (int32_t t : *from) to->push_back(t % o.model->config().vocab_size);
  }

  void aContinuationAfterACutEqualsAFreshSubmit_data() {
    QTest::addColumn<int>("block_size");
    QTest::addColumn<bool>("on_boundary");
    QTest::addColumn<bool>("fork");
    QTest::addColumn<bool>("seeded");
    for (int bs : {1, 4, 16, 32})
      for (bool boundary : {false, true})
        for (bool fork : {false, true})
          for (bool seeded : {false, true})
            QTest::addRow("bs%d_%s_%s_%s", bs, boundary ? "boundary" : "inside", fork ? "fork" : "rewind", seeded ? "seeded" : "greedy")
                << bs << boundary << fork << seeded;
  }

  void aContinuationAfterACutEqualsAFreshSubmit() {
    QFETCH(int, block_size);
    QFETCH(bool, on_boundary);
    QFETCH(bool, fork);
    QFETCH(bool, seeded);
    const Subject& s = subject();
    Engine engine(*s.model, *s.backend, config(block_size));
    RequestTracker tracker(engine);
    Request first;
    first.prompt = s.prompt;
    first.params = sampling(false, 24);
    first.park_when_done = true;
    const RequestId id = engine.submit(first);
    tracker.track(id, 1);
    while (engine.step()) {}
    const SequenceId parent = tracker.take_output(id).samples[0].seq;
    const std::vector<int32_t> stored = engine.stored_tokens(parent);
    QCOMPARE(stored.size(), s.prompt.size() + 23);  // the last sampled token is not stored yet

    // A cut inside the prompt's third block, or at its start (bs 1: every cut is a boundary).
    const int32_t k = std::min<int32_t>(on_boundary ? 2 * block_size : 2 * block_size + (block_size + 1) / 2 + (block_size == 1),
                                        static_cast<int32_t>(stored.size()) - 1);
    SequenceId seq = parent;
    const int64_t cow_before = engine.stats().kv.num_cow_copies;
    if (fork) {
      seq = engine.fork(parent, k);
      engine.step();
      const std::vector<int32_t> childTable = engine.sequence(seq)->block_table;
      const std::vector<int32_t> parentTable = engine.sequence(parent)->block_table;
      QCOMPARE(childTable.size(), static_cast<size_t>((k + block_size - 1) / block_size));
      QVERIFY(std::equal(childTable.begin(), childTable.end(), parentTable.begin()));  // shared up to the cut
    } else {
      engine.rewind(parent, k);
      engine.step();
    }
    QCOMPARE(engine.sequence(seq)->num_stored, k);
    QCOMPARE(engine.stored_tokens(seq), std::vector<int32_t>(stored.begin(), stored.begin() + k));
    QCOMPARE(engine.kv().check_invariants(), std::string());

    Request next;
    next.prompt = s.next;
    next.continue_seq = seq;
    next.params = sampling(seeded, 10);
    const int64_t computed_before = engine.stats().num_prefill_tokens + engine.stats().num_recomputed_tokens;
    const std::vector<int32_t> reply = run(engine, tracker, next);
    // Nothing but the new tokens computed.
    QCOMPARE(engine.stats().num_prefill_tokens + engine.stats().num_recomputed_tokens - computed_before,
             static_cast<int64_t>(s.next.size()));
    QCOMPARE(reply, fresh(block_size, std::vector<int32_t>(stored.begin(), stored.begin() + k), seeded));
    // A fork inside a block copies the shared partial block once; on a boundary nothing.
    if (fork) QCOMPARE(engine.stats().kv.num_cow_copies - cow_before, int64_t{k % block_size != 0 ? 1 : 0});
    QCOMPARE(engine.kv().check_invariants(), std::string());

    if (fork) {
      // The parent is untouched: it continues from all it stored.
      Request again;
      again.prompt = s.next;
      again.continue_seq = parent;
      again.params = sampling(seeded, 10);
      QCOMPARE(run(engine, tracker, again), fresh(block_size, stored, seeded));
    }
  }

  void badCutsAreRefusedAndChangeNothing() {
    const Subject& s = subject();
    Engine engine(*s.model, *s.backend, config(16));
    std::vector<EngineEvent> errors;
    engine.subscribe([&](const EngineEvent& e) {
      if (e.kind == EngineEventKind::error) errors.push_back(e);
    });
    RequestTracker tracker(engine);
    Request first;
    first.prompt = s.prompt;
    first.params = sampling(false, 4);
    first.park_when_done = true;
    const RequestId id = engine.submit(first);
    tracker.track(id, 1);
    while (engine.step()) {}
    const SequenceId parked = tracker.take_output(id).samples[0].seq;
    const int32_t stored = engine.sequence(parked)->num_stored;
    engine.rewind(parked, stored + 1);
    engine.rewind(parked, -1);
    engine.rewind(999, 3);
    const SequenceId a = engine.fork(parked, 0), b = engine.fork(parked, stored + 1);
    engine.step();
    QCOMPARE(errors.size(), size_t{5});
    QCOMPARE(errors[3].seq, a);
    QCOMPARE(errors[4].seq, b);
    for (const EngineEvent& e : errors) QCOMPARE(e.request, RequestId{-1});
    QVERIFY2(errors[0].reason.find("holds " + std::to_string(stored)) != std::string::npos, errors[0].reason.c_str());
    QCOMPARE(engine.sequence(parked)->num_stored, stored);
    QCOMPARE(engine.stats().num_parked, 1);
    QCOMPARE(engine.kv().check_invariants(), std::string());
  }
};

QTEST_APPLESS_MAIN(TestEngineRewind)
#include "test_engine_rewind.moc"
