// The engine's greedy output for a request is the same, token for token, alone or batched with
// 7 others, with block sizes 4, 16 and 32, through the prefix cache, under a pool so small that
// sequences are preempted (recomputed, or swapped to a host pool and back), with chunked prefill at 8 tokens a step, and as one
// of n = 4 parallel samples (whose prompt is computed once), and as the next turn of a parked
// sequence or of a fork of it (copy-on-write of the shared last block), and held back by its
// client mid-reply (Engine::hold) in a pool small enough that the held are preempted. Rests on the CPU forward giving
// the same bits for a row whatever else is in the batch (test_forward_invariance). Every case runs
// on the default model and on a random mixture of experts (tiny-moe: the step's tokens grouped by
// expert, so an expert's rows change with the batch; a request's tokens must not), and on gpt-oss's
// layers (tiny-oss: sinks, biases, a window of 16 on every other layer, which chunks and blocks cross).

#include <QtTest>

#include <map>
#include <memory>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/engine/engine.h"
#include "engine/model/model.h"
#include "engine/model/random_model.h"
#include "support/test_env.h"

using namespace pagedchat;

namespace {

constexpr int kMaxTokens = 12;

const char* const kPrompts[8] = {
    "The capital of France is",
    "Write a haiku about the sea.",
    "List three colours of the rainbow and say which one you like best, and why.",
    "Hi",
    "Explain in one sentence what a hash table is used for in computer programs.",
    "1, 2, 3, 4, 5,",
    "Once upon a time, in a small village at the edge of a dark forest, there lived an old "
    "woman who kept bees and told stories to the children who came to buy her honey.",
    "Translate to German: good morning",
};

struct Outcome {
  std::map<RequestId, std::vector<std::vector<int32_t>>> tokens;  // per request, per sample
  std::map<RequestId, std::string> finish;
  EngineStats stats;
};

Request greedy(std::vector<int32_t> prompt, int n = 1) {
  Request r;
  r.prompt = std::move(prompt);
  r.params.max_tokens = kMaxTokens;
  r.params.ignore_eos = true;  // every output has kMaxTokens tokens to compare
  r.n = n;
  return r;
}

// Runs the requests to completion on a fresh engine; `between` submits more after `after` steps.
Outcome run(Backend& backend, const Model& model, const EngineConfig& config, const std::vector<Request>& requests) {
  Engine engine(model, backend, config);
  Outcome out;
  engine.subscribe([&](const EngineEvent& e) {
    if (e.kind == EngineEventKind::token) {
      auto& samples = out.tokens[e.request];
      if (samples.size() <= static_cast<size_t>(e.index)) samples.resize(e.index + 1);
      samples[e.index].push_back(e.token);
    } else if (e.kind == EngineEventKind::finished) {
      out.finish[e.request] += e.reason;
    } else if (e.kind == EngineEventKind::error) {
      QWARN(e.reason.c_str());
    }
  });
  for (const Request& r : requests) engine.submit(r);
  int guard = 0;
  while (engine.step())
    if (++guard > 10000) break;
  out.stats = engine.stats();
  return out;
}

}  // namespace

class TestEngineDeterminism : public QObject {
  Q_OBJECT

  struct Subject {
    std::unique_ptr<Model> model;
    std::unique_ptr<CpuBackend> backend;
    std::vector<std::vector<int32_t>> prompts;
    std::vector<std::vector<int32_t>> alone;  // each prompt's output, run alone
  };
  std::map<QString, Subject> subjects_;
  // The current row's subject (init()).
  const Model* model_ = nullptr;
  CpuBackend* backend_ = nullptr;
  std::vector<std::vector<int32_t>> prompts_;
  std::vector<std::vector<int32_t>> alone_;

  // Blocks of 4 tokens, as many as the longest request (prompt + kMaxTokens) needs plus
  // `spare`: each request fits alone, all 8 together do not.
  EngineConfig tiny_pool(int32_t spare) const {
    EngineConfig c;
    c.block_size = 4;
    size_t longest = 0;
    for (const auto& p : prompts_) longest = std::max(longest, p.size());
    c.num_blocks = static_cast<int32_t>((longest + kMaxTokens + 3) / 4) + spare;
    return c;
  }

  std::vector<Request> all_requests() const {
    std::vector<Request> r;
    for (const auto& p : prompts_) r.push_back(greedy(p));
    return r;
  }

  // Runs the 8 prompts together and compares each output with its run alone.
  Outcome check_batched(const EngineConfig& config) {
    Outcome out = run(*backend_, *model_, config, all_requests());
    for (size_t i = 0; i < prompts_.size(); ++i) {
      RequestId id = static_cast<RequestId>(i) + 1;
      if (out.tokens[id].size() != 1 || out.tokens[id][0] != alone_[i])
        qFatal("prompt %zu: the batched output differs from the output alone", i);
      if (out.finish[id] != "length") qFatal("prompt %zu finished with '%s'", i, out.finish[id].c_str());
    }
    return out;
  }

 private slots:
  void initTestCase_data() {
    QTest::addColumn<QString>("model");
    QTest::newRow("default model") << "default";
    QTest::newRow("mixture of experts") << "tiny-moe";
    QTest::newRow("gpt-oss's layers") << "tiny-oss";
  }

  void initTestCase() {
    PC_REQUIRE_ENV(path, "PAGEDCHAT_TEST_MODEL");
    subjects_["default"].model = Model::load(path);
    subjects_["tiny-moe"].model = make_random_model("tiny-moe", 11, 2);
    subjects_["tiny-oss"].model = make_random_model("tiny-oss", 12, 2);
    // The same prompts for both: the default model's tokens (taken modulo the random model's
    // vocabulary), so the pools sized for them preempt the same way.
    std::vector<std::vector<int32_t>> prompts;
    for (const char* p : kPrompts) prompts.push_back(subjects_["default"].model->tokenizer->encode(p, true, false));
    for (auto& [name, s] : subjects_) {
      s.backend = std::make_unique<CpuBackend>(s.model->weights, 2);
      s.prompts = prompts;
      for (auto& p : s.prompts)
        for (int32_t& t : p) t %= s.model->config().vocab_size;
      for (const auto& p : s.prompts) {
        Outcome o = run(*s.backend, *s.model, EngineConfig{}, {greedy(p)});
        QCOMPARE(o.tokens[1].size(), size_t(1));
        QCOMPARE(o.tokens[1][0].size(), size_t(kMaxTokens));
        QCOMPARE(o.finish[1], std::string("length"));
        QCOMPARE(o.stats.num_prefill_tokens, static_cast<int64_t>(p.size()));
        QCOMPARE(o.stats.num_decode_tokens, int64_t(kMaxTokens - 1));
        s.alone.push_back(o.tokens[1][0]);
      }
    }
  }

  void init() {
    QFETCH_GLOBAL(QString, model);
    const Subject& s = subjects_.at(model);
    model_ = s.model.get();
    backend_ = s.backend.get();
    prompts_ = s.prompts;
    alone_ = s.alone;
  }

  void batched_with_seven_others() {
    EngineConfig c;
    Outcome out = check_batched(c);
    int64_t prompt_tokens = 0;
    for (const auto& p : prompts_) prompt_tokens += static_cast<int64_t>(p.size());
    QCOMPARE(out.stats.num_prefill_tokens, prompt_tokens);
    QCOMPARE(out.stats.num_preempted, int64_t(0));
    // All 8 prefilled in the first step, then decoded together.
    QCOMPARE(out.stats.num_steps, int64_t(kMaxTokens));
    QCOMPARE(out.stats.kv.num_used_blocks, 0);
  }

  void block_sizes() {
    for (int bs : {4, 16, 32}) {
      EngineConfig c;
      c.block_size = bs;
      c.num_blocks = 256;
      check_batched(c);
    }
  }

  void chunked_prefill_at_eight_tokens() {
    EngineConfig c;
    c.max_batched_tokens = 8;
    Outcome out = check_batched(c);
    int64_t prompt_tokens = 0;
    for (const auto& p : prompts_) prompt_tokens += static_cast<int64_t>(p.size());
    QCOMPARE(out.stats.num_prefill_tokens, prompt_tokens);
    QVERIFY(out.stats.num_steps >= (prompt_tokens + 8 * (kMaxTokens - 1)) / 8);
  }

  void tiny_pool_preempts_and_recomputes() {
    // 12 blocks of 4 tokens: the longest request (prompt + 12) fits alone, all 8 do not.
    EngineConfig c = tiny_pool(1);
    Outcome out = check_batched(c);
    QVERIFY2(out.stats.num_preempted > 0, "the pool was meant to force preemption");
    QCOMPARE(out.stats.kv.num_preemptions, out.stats.num_preempted);
    // Recompute is counted apart: prompt tokens once each, generated tokens once each (the
    // last sampled token of a victim is computed at the end of its recompute, as a decode).
    int64_t prompt_tokens = 0;
    for (const auto& p : prompts_) prompt_tokens += static_cast<int64_t>(p.size());
    QVERIFY(out.stats.num_recomputed_tokens > 0);
    QCOMPARE(out.stats.num_prefill_tokens, prompt_tokens);
    QCOMPARE(out.stats.num_decode_tokens, int64_t(8 * (kMaxTokens - 1)));
  }

  void tiny_pool_preempts_by_swap() {
    // The same tiny pool with a host pool: victims are swapped out and back in.
    EngineConfig c = tiny_pool(1);
    c.num_host_blocks = 64;
    Outcome out = check_batched(c);
    QVERIFY2(out.stats.num_swapped_out > 0, "the pool was meant to force swapping");
    QCOMPARE(out.stats.kv.num_swap_outs, out.stats.num_swapped_out);
    QCOMPARE(out.stats.kv.num_swap_ins, out.stats.num_swapped_out);
    QCOMPARE(out.stats.kv.num_swapped_blocks, 0);
    // Only victims that found no host room are recomputed.
    QCOMPARE(out.stats.num_recomputed_tokens == 0, out.stats.num_preempted == 0);
  }

  void held_mid_reply_then_let_go() {
    // The tiny pool again: the held requests are the ones preempted, the others run on.
    EngineConfig c = tiny_pool(2);
    Engine engine(*model_, *backend_, c);
    Outcome out;
    engine.subscribe([&](const EngineEvent& e) {
      if (e.kind == EngineEventKind::token) out.tokens[e.request].resize(1), out.tokens[e.request][0].push_back(e.token);
      if (e.kind == EngineEventKind::finished) out.finish[e.request] += e.reason;
    });
    for (const Request& r : all_requests()) engine.submit(r);
    for (int i = 0; i < 4; ++i) engine.step();
    for (RequestId id : {1, 3, 5, 7}) engine.hold(id, true);
    std::map<RequestId, size_t> at_hold;
    for (RequestId id : {1, 3, 5, 7}) at_hold[id] = out.tokens[id].empty() ? 0 : out.tokens[id][0].size();
    int steps = 0;
    while (engine.step() && ++steps < 10000) {
      if (std::string bad = engine.kv().check_invariants(); !bad.empty()) qFatal("KV invariant broken: %s", bad.c_str());
    }
    // Only held work is left: step() says there is nothing to do, and the held got no token.
    QCOMPARE(engine.stats().num_held, 4);
    for (RequestId id : {2, 4, 6, 8}) QCOMPARE(out.finish[id], std::string("length"));
    for (RequestId id : {1, 3, 5, 7}) {
      QCOMPARE(out.tokens[id].empty() ? size_t(0) : out.tokens[id][0].size(), at_hold[id]);
      QVERIFY(out.finish[id].empty());
    }
    for (RequestId id : {1, 3, 5, 7}) engine.hold(id, false);
    while (engine.step() && ++steps < 10000) {
    }
    for (size_t i = 0; i < prompts_.size(); ++i) {
      const RequestId id = static_cast<RequestId>(i) + 1;
      QCOMPARE(out.tokens[id][0], alone_[i]);
      QCOMPARE(out.finish[id], std::string("length"));
    }
    QCOMPARE(engine.stats().num_held, 0);
    QCOMPARE(engine.stats().kv.num_used_blocks, 0);
  }

  void prefix_cache_hit() {
    // The same prompt twice, the second after the first finished: its full blocks come from
    // the cache (all but the last block, which gives the logits), the output is the same.
    EngineConfig c;
    c.block_size = 4;
    const std::vector<int32_t>& p = prompts_[6];
    Engine engine(*model_, *backend_, c);
    std::map<RequestId, std::vector<int32_t>> tokens;
    engine.subscribe([&](const EngineEvent& e) {
      if (e.kind == EngineEventKind::token) tokens[e.request].push_back(e.token);
    });
    RequestId first = engine.submit(greedy(p));
    while (engine.step()) {}
    int64_t prefill_first = engine.stats().num_prefill_tokens;
    RequestId second = engine.submit(greedy(p));
    while (engine.step()) {}
    int64_t prefill_second = engine.stats().num_prefill_tokens - prefill_first;
    QCOMPARE(prefill_first, static_cast<int64_t>(p.size()));
    const int64_t last_block = (static_cast<int64_t>(p.size()) - 1) % 4 + 1;
    QCOMPARE(prefill_second, last_block);
    QCOMPARE(tokens[first], alone_[6]);
    QCOMPARE(tokens[second], alone_[6]);
    QCOMPARE(engine.stats().kv.prefix_hit_tokens, static_cast<int64_t>(p.size()) - last_block);
  }

  void shared_prefix_in_one_batch() {
    // 8 chats with one system prompt, submitted at once: the first computes the shared
    // blocks in its first chunk; the others, started in the same step after it, find them.
    std::vector<int32_t> system = model_->tokenizer->encode(
        "You are a helpful assistant. Answer briefly, politely and accurately, and never "
        "make anything up. If you do not know, say so.", true, false);
    std::vector<Request> requests;
    for (const char* p : kPrompts) {
      std::vector<int32_t> t = system;
      std::vector<int32_t> rest = model_->tokenizer->encode(p, false, false);
      t.insert(t.end(), rest.begin(), rest.end());
      requests.push_back(greedy(t));
    }
    EngineConfig c;
    c.block_size = 4;
    Outcome together = run(*backend_, *model_, c, requests);
    // Each later request hits the system prompt's full blocks, short of its own last token.
    const int64_t system_blocks = static_cast<int64_t>(system.size()) / 4;
    int64_t expected = 0;
    for (size_t i = 0; i < requests.size(); ++i) {
      const int64_t len = static_cast<int64_t>(requests[i].prompt.size());
      expected += len - (i == 0 ? 0 : std::min(system_blocks, (len - 1) / 4) * 4);
    }
    QCOMPARE(together.stats.num_prefill_tokens, expected);
    QVERIFY(expected < 8 * static_cast<int64_t>(system.size()));
    for (size_t i = 0; i < requests.size(); ++i) {
      Outcome alone = run(*backend_, *model_, c, {requests[i]});
      QCOMPARE(together.tokens[static_cast<RequestId>(i) + 1], alone.tokens[1]);
    }
  }

  void parallel_samples_compute_the_prompt_once() {
    const std::vector<int32_t>& p = prompts_[2];
    Outcome out = run(*backend_, *model_, EngineConfig{}, {greedy(p, 4)});
    QCOMPARE(out.tokens[1].size(), size_t(4));
    for (const auto& sample : out.tokens[1]) QCOMPARE(sample, alone_[2]);
    QCOMPARE(out.stats.num_prefill_tokens, static_cast<int64_t>(p.size()));
    QCOMPARE(out.stats.num_decode_tokens, int64_t(4 * (kMaxTokens - 1)));
    QCOMPARE(out.finish[1], std::string("lengthlengthlengthlength"));
  }

  void parallel_samples_match_single_requests_with_their_seeds() {
    // With temperature, sample i of n = 4 is the request run alone with seed + i.
    Request r = greedy(prompts_[0], 4);
    r.params.temperature = 0.9f;
    r.params.seed = 1234;
    Outcome forked = run(*backend_, *model_, EngineConfig{}, {r});
    QCOMPARE(forked.tokens[1].size(), size_t(4));
    for (int i = 0; i < 4; ++i) {
      Request single = r;
      single.n = 1;
      single.params.seed = 1234 + i;
      Outcome alone = run(*backend_, *model_, EngineConfig{}, {single});
      QCOMPARE(forked.tokens[1][i], alone.tokens[1][0]);
    }
  }

  void next_turn_of_a_parked_sequence_and_of_its_fork() {
    // Turn 1: prompt P, parked. Turn 2 appends Q, on the parked sequence and on a fork of it.
    // Both must answer as the whole conversation P + reply + Q run alone from scratch.
    EngineConfig c;
    c.block_size = 4;
    Engine engine(*model_, *backend_, c);
    std::map<RequestId, std::vector<int32_t>> tokens;
    SequenceId parked = -1;
    engine.subscribe([&](const EngineEvent& e) {
      if (e.kind == EngineEventKind::token) tokens[e.request].push_back(e.token);
      if (e.kind == EngineEventKind::finished && e.parked) parked = e.seq;
      if (e.kind == EngineEventKind::error) QWARN(e.reason.c_str());
    });
    Request turn1 = greedy(prompts_[1]);
    turn1.park_when_done = true;
    RequestId first = engine.submit(turn1);
    while (engine.step()) {}
    QVERIFY(parked >= 0);
    QCOMPARE(tokens[first], alone_[1]);
    SequenceId child = engine.fork(parked);
    engine.step();
    QVERIFY(engine.kv().has_sequence(child));
    QVERIFY(engine.stats().kv.num_shared_blocks > 0);

    std::vector<int32_t> next = {alone_[1].back()};  // the reply's last token is not stored yet
    std::vector<int32_t> q = model_->tokenizer->encode(" Now one about the moon.", false, false);
    next.insert(next.end(), q.begin(), q.end());
    int64_t prefill_before = engine.stats().num_prefill_tokens;
    Request on_child = greedy(next), on_parent = greedy(next);
    on_child.continue_seq = child;
    on_parent.continue_seq = parked;
    RequestId a = engine.submit(on_child), b = engine.submit(on_parent);
    while (engine.step()) {}
    QCOMPARE(engine.stats().num_prefill_tokens - prefill_before, static_cast<int64_t>(2 * next.size()));
    QCOMPARE(engine.stats().kv.num_used_blocks, 0);

    std::vector<int32_t> whole = prompts_[1];
    whole.insert(whole.end(), alone_[1].begin(), alone_[1].end());
    whole.insert(whole.end(), q.begin(), q.end());
    Outcome from_scratch = run(*backend_, *model_, c, {greedy(whole)});
    QCOMPARE(tokens[a], from_scratch.tokens[1][0]);
    QCOMPARE(tokens[b], from_scratch.tokens[1][0]);
  }
};

QTEST_APPLESS_MAIN(TestEngineDeterminism)
#include "test_engine_determinism.moc"
