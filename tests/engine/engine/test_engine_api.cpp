// The engine as a client sees it: token and finish events (with their reasons), errors that
// fail one request and leave the others running, abort freeing blocks at once, commands from
// another thread, parked sequences forked and released, and each step's record of what it ran
// (the timeline of continuous batching) adding up to the engine's counters.

#include <QtTest>

#include <memory>
#include <thread>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/engine/engine.h"
#include "engine/model/model.h"
#include "support/failing_backend.h"
#include "support/test_env.h"

using namespace pagedchat;
using pagedchat::test::FailingBackend;

namespace {

// Every event, in order.
struct Recorder {
  std::vector<EngineEvent> events;
  void attach(Engine& e) {
    e.subscribe([this](const EngineEvent& ev) {
      if (ev.kind != EngineEventKind::kv) events.push_back(ev);
    });
  }
  std::vector<EngineEvent> of(RequestId id, EngineEventKind kind) const {
    std::vector<EngineEvent> out;
    for (const EngineEvent& e : events)
      if (e.request == id && e.kind == kind) out.push_back(e);
    return out;
  }
  std::string text(RequestId id) const {
    std::string s;
    for (const EngineEvent& e : events)
      if (e.request == id && (e.kind == EngineEventKind::token || e.kind == EngineEventKind::finished)) s += e.text;
    return s;
  }
};


}  // namespace

class TestEngineApi : public QObject {
  Q_OBJECT

  std::unique_ptr<Model> model_;
  std::unique_ptr<CpuBackend> backend_;

  Request request(const char* text, int max_tokens) {
    Request r;
    r.prompt = model_->tokenizer->encode(text, true, false);
    r.params.max_tokens = max_tokens;
    r.params.ignore_eos = true;
    return r;
  }

 private slots:
  void initTestCase() {
    PC_REQUIRE_ENV(path, "PAGEDCHAT_TEST_MODEL");
    model_ = Model::load(path);
    backend_ = std::make_unique<CpuBackend>(model_->weights, 2);
  }

  void token_and_finish_events() {
    Engine engine(*model_, *backend_, EngineConfig{});
    Recorder rec;
    rec.attach(engine);
    int num_kv = 0, num_kv_named = 0;
    engine.subscribe([&](const EngineEvent& e) {
      num_kv += e.kind == EngineEventKind::kv;
      num_kv_named += e.kind == EngineEventKind::kv && e.request == 1;
    });
    RequestId id = engine.submit(request("The capital of France is", 6));
    while (engine.step()) {}
    std::vector<EngineEvent> tokens = rec.of(id, EngineEventKind::token);
    QCOMPARE(tokens.size(), size_t(6));
    std::vector<int32_t> ids;
    for (const EngineEvent& e : tokens) ids.push_back(e.token);
    QCOMPARE(rec.text(id), model_->tokenizer->decode(ids));
    std::vector<EngineEvent> done = rec.of(id, EngineEventKind::finished);
    QCOMPARE(done.size(), size_t(1));
    QCOMPARE(done[0].reason, std::string("length"));
    QVERIFY(!done[0].parked);
    QCOMPARE(rec.events.back().kind, EngineEventKind::finished);
    QVERIFY(num_kv > 0);  // allocations and the finish at least
    QCOMPARE(num_kv_named, num_kv);  // every one of them about this request's sequence
    QCOMPARE(engine.stats().kv.num_used_blocks, 0);
  }

  void stop_string_ends_with_stop() {
    // The stop string is the text of the greedy reply's k-th token (the first from the third on
    // whose text first occurs right there): the reply ends there, and the stop text never
    // reaches the events.
    Request probe = request("Write a haiku about the sea.", 8);
    Engine engine(*model_, *backend_, EngineConfig{});
    Recorder rec;
    rec.attach(engine);
    RequestId first = engine.submit(probe);
    while (engine.step()) {}
    std::vector<EngineEvent> tokens = rec.of(first, EngineEventKind::token);
    std::string head, stop;
    size_t k = 2;
    for (; k < tokens.size(); ++k) {
      std::vector<int32_t> ids;
      for (size_t i = 0; i < k; ++i) ids.push_back(tokens[i].token);
      head = model_->tokenizer->decode(ids);
      stop = model_->tokenizer->token_to_piece(tokens[k].token);
      if (!stop.empty() && (head + stop).find(stop) == head.size()) break;
    }
    QVERIFY2(k < tokens.size(), "no usable stop token in the greedy reply");
    probe.params.stop = {stop};
    RequestId second = engine.submit(probe);
    while (engine.step()) {}
    QCOMPARE(rec.of(second, EngineEventKind::finished)[0].reason, std::string("stop"));
    QCOMPARE(rec.of(second, EngineEventKind::token).size(), k + 1);
    QCOMPARE(rec.text(second), head);
  }

  void abort_frees_blocks_at_once() {
    EngineConfig c;
    c.block_size = 4;
    Engine engine(*model_, *backend_, c);
    Recorder rec;
    rec.attach(engine);
    RequestId a = engine.submit(request("Once upon a time, in a small village,", 40));
    RequestId b = engine.submit(request("Hi", 3));
    for (int i = 0; i < 2; ++i) engine.step();
    int used_by_both = engine.stats().kv.num_used_blocks;
    QVERIFY(used_by_both > 0);
    engine.abort(a);
    engine.step();  // applies the abort before its forward pass
    QCOMPARE(rec.of(a, EngineEventKind::finished).size(), size_t(1));
    QCOMPARE(rec.of(a, EngineEventKind::finished)[0].reason, std::string("abort"));
    QCOMPARE(rec.of(a, EngineEventKind::token).size(), size_t(2));
    QVERIFY(engine.stats().kv.num_used_blocks < used_by_both);
    while (engine.step()) {}
    QCOMPARE(rec.of(b, EngineEventKind::token).size(), size_t(3));
    QCOMPARE(engine.stats().kv.num_used_blocks, 0);
    QCOMPARE(engine.kv().check_invariants(), std::string());
    engine.abort(a);  // already over: nothing happens
    engine.abort(12345);
    QVERIFY(!engine.step());
    QCOMPARE(rec.of(a, EngineEventKind::finished).size(), size_t(1));
  }

  void a_prompt_that_can_never_fit_fails_alone() {
    // 6 blocks of 4 tokens: a 30-token prompt can never be held; the others run.
    EngineConfig c;
    c.block_size = 4;
    c.num_blocks = 6;
    Engine engine(*model_, *backend_, c);
    Recorder rec;
    rec.attach(engine);
    RequestId small1 = engine.submit(request("Hi", 4));
    Request big = request("Once upon a time, in a small village at the edge of a dark forest, there lived an "
                          "old woman who kept bees.", 4);
    QVERIFY(big.prompt.size() > 24);
    RequestId huge = engine.submit(big);
    RequestId small2 = engine.submit(request("Good morning", 4));
    while (engine.step()) {}
    std::vector<EngineEvent> errors = rec.of(huge, EngineEventKind::error);
    QCOMPARE(errors.size(), size_t(1));
    QVERIFY2(errors[0].reason.find("whole pool has 6") != std::string::npos, errors[0].reason.c_str());
    QVERIFY(rec.of(huge, EngineEventKind::token).empty());
    QCOMPARE(rec.of(small1, EngineEventKind::token).size(), size_t(4));
    QCOMPARE(rec.of(small2, EngineEventKind::token).size(), size_t(4));
    QCOMPARE(rec.of(small1, EngineEventKind::finished)[0].reason, std::string("length"));
  }

  void a_reply_that_outgrows_the_pool_ends_with_length() {
    EngineConfig c;
    c.block_size = 4;
    c.num_blocks = 3;  // 12 tokens
    Engine engine(*model_, *backend_, c);
    Recorder rec;
    rec.attach(engine);
    Request r = request("Hi", 50);
    RequestId id = engine.submit(r);
    while (engine.step()) {}
    QCOMPARE(rec.of(id, EngineEventKind::finished)[0].reason, std::string("length"));
    QCOMPARE(rec.of(id, EngineEventKind::token).size(), size_t(12 - r.prompt.size() + 1));
  }

  void bad_requests_get_error_events() {
    Engine engine(*model_, *backend_, EngineConfig{});
    Recorder rec;
    rec.attach(engine);
    Request empty = request("x", 4);
    empty.prompt.clear();
    Request out_of_vocab = request("x", 4);
    out_of_vocab.prompt.push_back(model_->config().vocab_size);
    Request bad_params = request("x", 4);
    bad_params.params.temperature = -1.0f;
    Request bad_n = request("x", 4);
    bad_n.n = 0;
    Request not_parked = request("x", 4);
    not_parked.continue_seq = 999;
    std::vector<RequestId> ids;
    for (const Request& r : {empty, out_of_vocab, bad_params, bad_n, not_parked}) ids.push_back(engine.submit(r));
    QVERIFY(!engine.step());
    const char* expected[] = {"the prompt is empty", "outside the vocabulary", "", "n must be", "is not parked"};
    for (size_t i = 0; i < ids.size(); ++i) {
      std::vector<EngineEvent> errors = rec.of(ids[i], EngineEventKind::error);
      QCOMPARE(errors.size(), size_t(1));
      QVERIFY2(errors[0].reason.find(expected[i]) != std::string::npos, errors[0].reason.c_str());
    }
    QCOMPARE(rec.events.size(), ids.size());
  }

  void commands_from_another_thread() {
    Engine engine(*model_, *backend_, EngineConfig{});
    Recorder rec;
    rec.attach(engine);
    std::vector<RequestId> ids(4);
    std::thread client([&] {
      for (int i = 0; i < 4; ++i) ids[i] = engine.submit(request("Count: 1, 2,", 3));
    });
    client.join();
    while (engine.step()) {}
    QCOMPARE(ids, (std::vector<RequestId>{1, 2, 3, 4}));
    for (RequestId id : ids) QCOMPARE(rec.of(id, EngineEventKind::token).size(), size_t(3));
  }

  void parked_sequences_fork_and_release() {
    EngineConfig c;
    c.block_size = 4;
    Engine engine(*model_, *backend_, c);
    Recorder rec;
    rec.attach(engine);
    Request r = request("The capital of France is", 5);
    r.park_when_done = true;
    RequestId id = engine.submit(r);
    while (engine.step()) {}
    std::vector<EngineEvent> done = rec.of(id, EngineEventKind::finished);
    QVERIFY(done[0].parked);
    SequenceId parent = done[0].seq;
    const int held = engine.stats().kv.num_used_blocks;
    QCOMPARE(held, static_cast<int>((r.prompt.size() + 4 + 3) / 4));  // the last token is not stored
    SequenceId child = engine.fork(parent);
    QVERIFY(!engine.step());
    QCOMPARE(engine.stats().num_parked, 2);
    QCOMPARE(engine.stats().kv.num_used_blocks, held);  // shared, not copied
    QCOMPARE(engine.stats().kv.num_shared_blocks, held);
    engine.release(parent);
    engine.step();
    QCOMPARE(engine.stats().kv.num_used_blocks, held);
    QCOMPARE(engine.stats().kv.num_shared_blocks, 0);
    engine.release(child);
    SequenceId orphan = engine.fork(parent);  // released: an error for the child
    engine.step();
    QCOMPARE(engine.stats().kv.num_used_blocks, 0);
    QCOMPARE(engine.stats().num_parked, 0);
    QCOMPARE(rec.events.back().kind, EngineEventKind::error);
    QCOMPARE(rec.events.back().seq, orphan);
  }

  void parallel_samples_share_the_prompt_blocks() {
    EngineConfig c;
    c.block_size = 4;
    Engine engine(*model_, *backend_, c);
    Request r = request("List three colours of the rainbow.", 3);
    r.n = 4;
    engine.submit(r);
    engine.step();  // prefill once, fork 4 ways, first token each
    const int prompt_blocks = static_cast<int>((r.prompt.size() + 3) / 4);
    QCOMPARE(engine.stats().num_running, 4);
    QCOMPARE(engine.stats().kv.num_used_blocks, prompt_blocks);
    QCOMPARE(engine.stats().kv.num_shared_refs, int64_t(3 * prompt_blocks));
    QCOMPARE(engine.stats().num_prefill_tokens, static_cast<int64_t>(r.prompt.size()));
    while (engine.step()) {}
    QCOMPARE(engine.stats().kv.num_used_blocks, 0);
  }

  // Compare with different settings: each sample samples with its own params, the prompt is
  // still computed once, and a greedy sample equals the same request run alone.
  void samples_with_their_own_settings_share_one_prefill() {
    auto run_alone = [&](const SamplingParams& p) {
      Engine engine(*model_, *backend_, EngineConfig{});
      Recorder rec;
      rec.attach(engine);
      Request r = request("Name a fruit.", 8);
      r.params = p;
      const RequestId id = engine.submit(r);
      while (engine.step()) {}
      return rec.text(id);
    };
    SamplingParams greedy;
    greedy.max_tokens = 8;
    greedy.ignore_eos = true;
    SamplingParams hot = greedy;
    hot.temperature = 1.5f;
    hot.seed = 7;
    hot.max_tokens = 5;
    SamplingParams cool = greedy;
    cool.temperature = 0.3f;
    cool.top_k = 5;
    cool.seed = 3;
    cool.max_tokens = 3;

    Engine engine(*model_, *backend_, EngineConfig{});
    Recorder rec;
    rec.attach(engine);
    Request r = request("Name a fruit.", 8);
    r.n = 3;
    r.sample_params = {greedy, hot, cool};
    const RequestId id = engine.submit(r);
    while (engine.step()) {}
    QCOMPARE(engine.stats().num_prefill_tokens, static_cast<int64_t>(r.prompt.size()));
    std::vector<int> tokens(3, 0);
    std::vector<std::string> texts(3);
    for (const EngineEvent& e : rec.of(id, EngineEventKind::token)) {
      ++tokens[static_cast<size_t>(e.index)];
      texts[static_cast<size_t>(e.index)] += e.text;
    }
    for (const EngineEvent& e : rec.of(id, EngineEventKind::finished)) texts[static_cast<size_t>(e.index)] += e.text;
    QCOMPARE(tokens, (std::vector<int>{8, 5, 3}));  // each sample's own max_tokens
    QCOMPARE(texts[0], run_alone(greedy));
    QCOMPARE(texts[1], run_alone(hot));  // own seed, as given (not seed + i)
    QCOMPARE(texts[2], run_alone(cool));

    // A list that does not match n is refused like any bad request.
    Request bad = request("Name a fruit.", 4);
    bad.n = 2;
    bad.sample_params = {greedy};
    const RequestId bad_id = engine.submit(bad);
    engine.step();
    QCOMPARE(rec.of(bad_id, EngineEventKind::error).size(), size_t{1});
  }

  void each_step_records_what_it_computed() {
    // A long prompt in chunks of 8 beside a short one already decoding: the records say which
    // step ran which chunk, and add up to the counters.
    EngineConfig c;
    c.max_batched_tokens = 8;
    c.block_size = 4;
    c.num_blocks = 64;
    Engine engine(*model_, *backend_, c);
    const RequestId shortId = engine.submit(request("Hi", 10));
    engine.step();
    engine.step();
    Request longReq = request("Once upon a time, in a small village at the edge of a dark forest, there lived an old woman.", 4);
    const int64_t longPrompt = static_cast<int64_t>(longReq.prompt.size());
    engine.submit(std::move(longReq));
    int64_t prompt = 0, decode = 0, steps = 2;
    int mixed = 0;
    std::vector<int32_t> starts;  // of the long prompt's chunks, in order
    for (bool more = true; more;) {
      more = engine.step();
      const StepRecord& r = engine.last_step();
      if (r.chunks.empty()) continue;
      ++steps;
      QCOMPARE(r.step_index, engine.stats().num_steps);
      int32_t tokens = 0;
      bool anyDecode = false, anyPrompt = false;
      for (const StepRecord::Chunk& ch : r.chunks) {
        tokens += ch.num_tokens;
        if (ch.is_decode) {
          QCOMPARE(ch.num_tokens, 1);
          ++decode;
          anyDecode = true;
        } else {
          prompt += ch.num_tokens;
          anyPrompt = true;
          starts.push_back(ch.start);
        }
      }
      QVERIFY(tokens <= 8);
      mixed += anyDecode && anyPrompt;
    }
    QCOMPARE(prompt, longPrompt);
    QVERIFY2(mixed >= 1, "a prompt chunk was meant to run beside a decode");
    for (size_t i = 1; i < starts.size(); ++i) QVERIFY(starts[i] > starts[i - 1]);
    QCOMPARE(steps, engine.stats().num_steps);
    (void)shortId;
    // Decodes: the short request's 9 after its first token (one ran in the two steps before), the long one's 3.
    QCOMPARE(decode + 1, engine.stats().num_decode_tokens);
    engine.step();
    QVERIFY(engine.last_step().empty());  // nothing left: a step runs nothing
  }

  void a_failed_forward_fails_its_requests_only() {
    FailingBackend failing(*backend_);
    Engine engine(*model_, failing, EngineConfig{});
    Recorder rec;
    rec.attach(engine);
    RequestId a = engine.submit(request("The capital of France is", 4));
    engine.step();
    failing.fail_next = true;
    const char* long_prompt = "Once upon a time, in a small village at the edge of a dark forest, there lived an old woman.";
    RequestId b = engine.submit(request(long_prompt, 4));
    engine.step();  // a's decode and b's prompt in one failed pass
    for (RequestId id : {a, b}) {
      QCOMPARE(rec.of(id, EngineEventKind::error).size(), size_t(1));
      QVERIFY(rec.of(id, EngineEventKind::error)[0].reason.find("device lost") != std::string::npos);
      QCOMPARE(rec.of(id, EngineEventKind::finished)[0].reason, std::string("error"));
    }
    QCOMPARE(engine.stats().kv.num_used_blocks, 0);
    QCOMPARE(engine.kv().check_invariants(), std::string());
    // Nothing they wrote is served from the cache: the same prompt runs again in full.
    int64_t before = engine.stats().num_prefill_tokens;
    Request again = request(long_prompt, 4);
    QVERIFY(again.prompt.size() > 16);  // at least one full block
    RequestId c = engine.submit(again);
    while (engine.step()) {}
    QCOMPARE(rec.of(c, EngineEventKind::token).size(), size_t(4));
    QCOMPARE(engine.stats().num_prefill_tokens - before, static_cast<int64_t>(again.prompt.size()));
  }
};

QTEST_APPLESS_MAIN(TestEngineApi)
#include "test_engine_api.moc"
