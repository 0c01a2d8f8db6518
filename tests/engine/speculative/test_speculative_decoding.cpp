// Speculative decoding on the real model keeps the output: with greedy sampling every request
// gives the same tokens, text and finish reason as without drafts, alone or batched with plain
// sequences, with any K, adaptive or not, under preemption (recompute and swap), as n parallel
// samples, parked and continued, and with a stop string inside a copied span. The KV manager's
// invariants hold after every step and every block is back at the end; rejected drafts leave
// through rewind, so the free events match.

#include <QtTest>

#include <map>
#include <memory>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/engine/engine.h"
#include "engine/chat/chat_model.h"
#include "engine/model/model.h"
#include "engine/speculative/ngram_drafter.h"
#include "support/engine_run.h"
#include "support/test_env.h"

using namespace pagedchat;

namespace {

// A copy-heavy request (the reply repeats the prompt) and free-form ones.
const char* const kCopyText =
    "The quick brown fox jumps over the lazy dog. A journey of a thousand miles begins with a single step. "
    "All that glitters is not gold. The early bird catches the worm, but the second mouse gets the cheese.";
const char* const kChats[] = {"Write a haiku about the sea.", "What is a hash table?", "Hi, who are you?"};

struct Outcome : test::EngineRecord {
  EngineStats stats;
};

Outcome run(Engine& engine, const std::vector<Request>& requests) {
  Outcome out;
  out.listen(engine);
  for (const Request& r : requests) engine.submit(r);
  test::run_to_end(engine);
  out.stats = engine.stats();
  return out;
}

EngineConfig speculating(int k, bool adaptive, int min_ngram = 2) {
  EngineConfig c;
  c.drafter = std::make_shared<NgramDrafter>(min_ngram, 4);
  c.speculation.max_draft_tokens = k;
  c.speculation.adaptive = adaptive;
  return c;
}

}  // namespace

class TestSpeculativeDecoding : public QObject {
  Q_OBJECT

  std::unique_ptr<Model> model_;
  ChatModel chat_;  // model_ with its own chat template
  std::unique_ptr<CpuBackend> backend_;
  std::vector<int32_t> copy_prompt_;
  std::vector<std::vector<int32_t>> chat_prompts_;

  Request greedy(const std::vector<int32_t>& prompt, int max_tokens = 48) const {
    Request r;
    r.prompt = prompt;
    r.params.max_tokens = max_tokens;
    return r;
  }

  std::vector<Request> all_requests() const {
    std::vector<Request> r{greedy(copy_prompt_, 64)};
    for (const auto& p : chat_prompts_) r.push_back(greedy(p));
    return r;
  }

  Outcome run_with(const EngineConfig& config, const std::vector<Request>& requests) {
    Engine engine(*model_, *backend_, config);
    return run(engine, requests);
  }

  static void compare(const Outcome& plain, const Outcome& spec, const char* what) {
    for (const auto& [id, samples] : plain.tokens) {
      if (spec.tokens.count(id) == 0 || spec.tokens.at(id) != samples)
        qFatal("%s: request %lld's tokens differ from plain decoding", what, static_cast<long long>(id));
      if (spec.text.at(id) != plain.text.at(id)) qFatal("%s: request %lld's text differs", what, static_cast<long long>(id));
      if (spec.finish.at(id) != plain.finish.at(id)) qFatal("%s: request %lld's finish differs", what, static_cast<long long>(id));
    }
    QCOMPARE(spec.tokens.size(), plain.tokens.size());
    QCOMPARE(spec.stats.num_generated, plain.stats.num_generated);
    QCOMPARE(spec.stats.kv.num_used_blocks, 0);
  }

 private slots:
  void initTestCase() {
    PC_REQUIRE_ENV(path, "PAGEDCHAT_TEST_MODEL");
    model_ = Model::load(path);
    chat_ = ChatModel(*model_, ChatModel::own_template(*model_));
    backend_ = std::make_unique<CpuBackend>(model_->weights, 2);
    std::string copy_request = "Repeat this text exactly, word for word:\n\n";
    copy_request.append(kCopyText);  // not operator+: GCC 12 warns falsely on it (-Warray-bounds)
    copy_prompt_ = chat_.encode_chat({{"user", copy_request}});
    for (const char* c : kChats) chat_prompts_.push_back(chat_.encode_chat({{"user", c}}));
  }

  // Alone, each request, at K = 1, 4 and 8, adaptive or not, single-token n-grams or not.
  void greedyOutputIsPlainOutputAlone() {
    for (const Request& r : all_requests()) {
      const Outcome plain = run_with(EngineConfig{}, {r});
      QCOMPARE(plain.stats.num_draft_tokens, int64_t(0));
      for (auto [k, adaptive, min_ngram] : {std::tuple{1, false, 2}, std::tuple{4, false, 1}, std::tuple{8, true, 2}}) {
        const Outcome spec = run_with(speculating(k, adaptive, min_ngram), {r});
        compare(plain, spec, "alone");
        QVERIFY(spec.stats.num_accepted_tokens <= spec.stats.num_draft_tokens);
        // Each accepted draft is a token that took no step of its own (a reply that ends inside
        // a draft leaves the drafts after its end, or the extra token, unused).
        const int64_t decodes = spec.stats.num_spec_decodes + spec.stats.num_plain_decodes;
        QVERIFY(decodes + spec.stats.num_accepted_tokens >= plain.stats.num_plain_decodes);
        QVERIFY(decodes <= plain.stats.num_plain_decodes);
        QVERIFY(spec.stats.num_steps <= plain.stats.num_steps);
      }
    }
  }

  // The copy request drafts most of its reply and keeps most of what it drafts; its tokens per
  // step rise. (Shares of the reply, not counts: how closely the model copies moves with the
  // build's rounding, -O1 under the sanitizers against -O2, though each build is deterministic.)
  void copyingKeepsMostDrafts() {
    const Outcome plain = run_with(EngineConfig{}, {greedy(copy_prompt_, 64)});
    const Outcome spec = run_with(speculating(6, false), {greedy(copy_prompt_, 64)});
    compare(plain, spec, "copy");
    QVERIFY2(plain.stats.num_generated >= 32, qPrintable(QString::number(plain.stats.num_generated)));
    QVERIFY2(spec.stats.num_draft_tokens * 10 >= plain.stats.num_generated * 6,
             qPrintable(QString("%1 drafts for %2 tokens").arg(spec.stats.num_draft_tokens).arg(plain.stats.num_generated)));
    QVERIFY2(spec.stats.num_accepted_tokens * 10 >= spec.stats.num_draft_tokens * 6,
             qPrintable(QString("%1 of %2").arg(spec.stats.num_accepted_tokens).arg(spec.stats.num_draft_tokens)));
    QVERIFY2(spec.stats.num_steps * 2 <= plain.stats.num_steps,
             qPrintable(QString("%1 steps against %2").arg(spec.stats.num_steps).arg(plain.stats.num_steps)));
    // Every rejected draft's K/V was cut off: more frees than plain decoding had.
    if (spec.stats.num_accepted_tokens < spec.stats.num_draft_tokens) QVERIFY(spec.kv_frees >= plain.kv_frees);
  }

  // Speculating sequences batched with each other and with plain ones (K = 0 for those that
  // found nothing), in one engine: each equals its run alone. Drafting every proposal, some
  // drafts are kept; the adaptive plan may draft nothing at a batch of four (a draft must be
  // likelier than its share of a compute-bound step), so it is only compared.
  void greedyOutputIsPlainOutputBatched() {
    const std::vector<Request> requests = all_requests();
    Outcome plain;
    for (size_t i = 0; i < requests.size(); ++i) {
      Outcome alone = run_with(EngineConfig{}, {requests[i]});
      const RequestId id = static_cast<RequestId>(i) + 1;
      plain.tokens[id] = alone.tokens[1];
      plain.text[id] = alone.text[1];
      plain.finish[id] = alone.finish[1];
      plain.stats.num_generated += alone.stats.num_generated;
    }
    for (bool adaptive : {false, true}) {
      const Outcome spec = run_with(speculating(5, adaptive), requests);
      compare(plain, spec, adaptive ? "batched, adaptive" : "batched");
      if (!adaptive) QVERIFY(spec.stats.num_accepted_tokens > 0);
    }
  }

  // A pool too small for all of them: sequences are preempted (recompute, then swap) between
  // speculative steps; their drafts go with the preemption and the output stays.
  void greedyOutputIsPlainOutputUnderPreemption() {
    std::vector<Request> requests = all_requests();
    requests.push_back(greedy(copy_prompt_, 64));
    for (int32_t host : {0, 64}) {
      EngineConfig small;
      small.block_size = 16;
      small.num_blocks = 14;
      small.num_host_blocks = host;
      const Outcome plain = run_with(small, requests);
      QVERIFY(plain.stats.num_preempted + plain.stats.num_swapped_out > 0);
      EngineConfig spec_config = speculating(6, false);
      spec_config.block_size = small.block_size;
      spec_config.num_blocks = small.num_blocks;
      spec_config.num_host_blocks = host;
      const Outcome spec = run_with(spec_config, requests);
      compare(plain, spec, host ? "swap" : "recompute");
      QVERIFY(spec.stats.num_preempted + spec.stats.num_swapped_out > 0);
      QVERIFY(spec.stats.num_accepted_tokens > 0);
    }
  }

  // n = 3 greedy samples (forks of one prompt) all speculate and all give the plain output.
  void parallelSamplesSpeculateToo() {
    Request r = greedy(copy_prompt_, 40);
    r.n = 3;
    const Outcome plain = run_with(EngineConfig{}, {r});
    const Outcome spec = run_with(speculating(4, false), {r});
    compare(plain, spec, "n = 3");
    QCOMPARE(spec.tokens.at(1).size(), size_t(3));
    QVERIFY(spec.stats.num_accepted_tokens > 0);
  }

  // A running sequence forked mid-reply while it speculates: parent and child each go on as
  // plain decoding does (greedy: both give the plain reply).
  void forkOfASpeculatingSequence() {
    const Outcome plain = run_with(EngineConfig{}, {greedy(copy_prompt_, 48)});
    Engine engine(*model_, *backend_, speculating(6, false));
    Outcome out;
    out.listen(engine);
    engine.submit(greedy(copy_prompt_, 48));
    SequenceId parent = -1;
    for (int step = 0; engine.step(); ++step) {
      if (std::string bad = engine.kv().check_invariants(); !bad.empty()) qFatal("KV invariant broken: %s", bad.c_str());
      if (step == 6) {
        for (SequenceId id = 1; id < 8 && parent < 0; ++id)
          if (engine.sequence(id)) parent = id;
        QVERIFY(parent > 0);
        engine.fork(parent);
      }
    }
    QCOMPARE(out.tokens[1].size(), size_t(2));
    const std::vector<int32_t>& expected = plain.tokens.at(1).at(0);
    QCOMPARE(out.tokens[1][0], expected);
    // The child's events start after the fork: its tokens are the tail of the same reply.
    const std::vector<int32_t>& child = out.tokens[1][1];
    QVERIFY(!child.empty() && child.size() < expected.size());
    QVERIFY(std::equal(child.begin(), child.end(), expected.end() - static_cast<std::ptrdiff_t>(child.size())));
    QVERIFY(engine.stats().num_accepted_tokens > 0);
    QCOMPARE(engine.stats().kv.num_used_blocks, 0);
  }

  // A parked reply holds the same tokens as without drafts (its last sampled token not stored,
  // even when the reply ended inside a verified draft), and its next turn continues the same.
  void parkedReplyHoldsThePlainTokens() {
    for (int max_tokens : {30, 37, 64}) {
      std::vector<int32_t> held[2];
      std::vector<std::vector<int32_t>> next[2];
      for (int spec = 0; spec < 2; ++spec) {
        Engine engine(*model_, *backend_, spec ? speculating(6, false) : EngineConfig{});
        Request r = greedy(copy_prompt_, max_tokens);
        r.park_when_done = true;
        Outcome first = run(engine, {r});
        QVERIFY(first.parked.count(1));
        const SequenceId seq = first.parked[1];
        held[spec] = engine.stored_tokens(seq);
        Request more = greedy({first.tokens[1][0].back()}, 24);
        more.continue_seq = seq;
        Outcome second = run(engine, {more});
        next[spec] = second.tokens[2];
      }
      QCOMPARE(held[1], held[0]);
      QCOMPARE(next[1], next[0]);
    }
  }

  // A stop string inside the copied text ends the reply at the same place, cut the same way.
  void stopStringInsideADraft() {
    Request r = greedy(copy_prompt_, 64);
    r.params.stop = {"thousand"};
    const Outcome plain = run_with(EngineConfig{}, {r});
    QCOMPARE(plain.finish.at(1), std::string("stop"));
    const Outcome spec = run_with(speculating(8, false), {r});
    compare(plain, spec, "stop string");
  }

  // Sampled (temperature 0.8, top-p): runs, keeps the invariants, same count of tokens
  // (ignore_eos), and seeded runs repeat themselves.
  void sampledSpeculationRepeatsWithItsSeed() {
    Request r = greedy(copy_prompt_, 40);
    r.params.temperature = 0.8f;
    r.params.top_p = 0.95f;
    r.params.seed = 11;
    r.params.ignore_eos = true;
    const Outcome a = run_with(speculating(6, false), {r});
    const Outcome b = run_with(speculating(6, false), {r});
    QCOMPARE(a.tokens.at(1).at(0).size(), size_t(40));
    QCOMPARE(a.tokens, b.tokens);
    QVERIFY(a.stats.num_accepted_tokens > 0);
    QCOMPARE(a.stats.kv.num_used_blocks, 0);
  }
};

QTEST_APPLESS_MAIN(TestSpeculativeDecoding)
#include "test_speculative_decoding.moc"
