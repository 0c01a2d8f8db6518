// Forking a running sequence between two steps: the child shares every block of its parent
// (each block counted once, ref count 2), the first appends into the shared partial last block
// copy it, and with greedy sampling the child continues exactly as the parent does and as the
// request run alone. A temperature fork is reproducible and leaves the parent's draws alone; a
// parent that parks when done has its fork parked too; abort ends both; forks of sequences that
// cannot be forked (unknown, finished, still prefilling) fail alone. The KV invariants are
// checked after every step.

#include <QtTest>

#include <map>
#include <memory>
#include <set>
#include <span>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/engine/engine.h"
#include "engine/model/model.h"
#include "support/test_env.h"

using namespace pagedchat;

namespace {

constexpr int kBlockSize = 4;
constexpr int kMaxTokens = 10;

// What one engine run told its subscribers, by sequence.
struct Outcome {
  std::map<SequenceId, std::vector<int32_t>> tokens;
  std::map<SequenceId, std::vector<EngineEvent>> finished;
  std::map<SequenceId, int> index;
  std::vector<EngineEvent> errors;
  std::vector<KvEvent> kv;
  std::set<RequestId> requests;  // of the token and finished events
  std::string first_violation;   // the first failed KV invariant check, with the step
};

// A run forked once: the parent's state at the fork and the stats around the fork's step.
struct ForkRun {
  Outcome out;
  SequenceId parent = -1, child = -1;
  int32_t stored_at_fork = 0;          // tokens in the parent's blocks
  std::vector<int32_t> parent_table;   // its block table at the fork
  KvSnapshot at_fork;                  // taken as the KV manager recorded the fork
  int32_t used_before = 0;             // in-use blocks before the fork's step
  int64_t cow_before = 0;
  EngineStats after_fork_step, end;
};

EngineConfig config() {
  EngineConfig c;
  c.block_size = kBlockSize;
  return c;
}

}  // namespace

class TestEngineFork : public QObject {
  Q_OBJECT

  std::unique_ptr<Model> model_;
  std::unique_ptr<CpuBackend> backend_;
  std::vector<int32_t> prompt_;
  std::vector<int32_t> alone_;  // the greedy reply to prompt_, run alone

  Request greedy() const {
    Request r;
    r.prompt = prompt_;
    r.params.max_tokens = kMaxTokens;
    r.params.ignore_eos = true;  // every reply has kMaxTokens tokens to compare
    return r;
  }

  // Records every event of `engine` into `out`; at the KV fork event, also what run->at_fork
  // and run->parent_table describe (the state a fork leaves before anything is appended).
  void record(Engine& engine, Outcome& out, ForkRun* run = nullptr) {
    engine.subscribe([&engine, &out, run](const EngineEvent& e) {
      switch (e.kind) {
        case EngineEventKind::token:
          out.tokens[e.seq].push_back(e.token);
          out.index[e.seq] = e.index;
          out.requests.insert(e.request);
          break;
        case EngineEventKind::finished:
          out.finished[e.seq].push_back(e);
          out.requests.insert(e.request);
          break;
        case EngineEventKind::error: out.errors.push_back(e); break;
        case EngineEventKind::kv:
          out.kv.push_back(e.kv);
          if (run && e.kv.kind == KvEventKind::fork) {
            run->at_fork = engine.snapshot();
            std::span<const int32_t> t = engine.kv().block_table(e.kv.peer);
            run->parent_table.assign(t.begin(), t.end());
          }
          break;
      }
    });
  }

  static void step_checked(Engine& engine, Outcome& out, bool* more = nullptr) {
    bool m = engine.step();
    if (more) *more = m;
    std::string v = engine.kv().check_invariants();
    if (!v.empty() && out.first_violation.empty())
      out.first_violation = "step " + std::to_string(engine.stats().num_steps) + ": " + v;
  }

  // Runs `r` on a fresh engine and forks its sequence once it has generated k tokens.
  ForkRun run_with_fork(const Request& r, int k) {
    ForkRun run;
    Engine engine(*model_, *backend_, config());
    record(engine, run.out, &run);
    engine.submit(r);
    bool more = true;
    while (more && (run.out.tokens.empty() || static_cast<int>(run.out.tokens.begin()->second.size()) < k))
      step_checked(engine, run.out, &more);
    run.parent = run.out.tokens.begin()->first;
    run.stored_at_fork = engine.kv().num_tokens(run.parent);
    run.used_before = engine.stats().kv.num_used_blocks;
    run.cow_before = engine.stats().kv.num_cow_copies;
    run.child = engine.fork(run.parent);
    step_checked(engine, run.out);
    run.after_fork_step = engine.stats();
    do step_checked(engine, run.out, &more);
    while (more);
    run.end = engine.stats();
    return run;
  }

  std::vector<int32_t> alone_tail(int k) const { return {alone_.begin() + k, alone_.end()}; }

 private slots:
  void initTestCase() {
    PC_REQUIRE_ENV(path, "PAGEDCHAT_TEST_MODEL");
    model_ = Model::load(path);
    backend_ = std::make_unique<CpuBackend>(model_->weights, 2);
    prompt_ = model_->tokenizer->encode("The capital of France is", true, false);
    Engine engine(*model_, *backend_, config());
    Outcome out;
    record(engine, out);
    engine.submit(greedy());
    while (engine.step()) {}
    QCOMPARE(out.tokens.size(), size_t(1));
    alone_ = out.tokens.begin()->second;
    QCOMPARE(alone_.size(), size_t(kMaxTokens));
  }

  void greedy_fork_continues_as_the_parent_and_alone() {
    // k = 1..4 puts the parent's last stored token at every offset of a 4-token block, so the
    // fork point is a block boundary once (no copy: each takes a fresh block) and inside the
    // shared partial block three times (one copy-on-write: the parent appends first and copies,
    // then the child writes in place, the only holder left).
    bool saw_boundary = false, saw_partial = false;
    for (int k = 1; k <= 4; ++k) {
      ForkRun run = run_with_fork(greedy(), k);
      const Outcome& out = run.out;
      QVERIFY2(out.first_violation.empty(), out.first_violation.c_str());
      QVERIFY(out.errors.empty());
      QCOMPARE(out.tokens.at(run.parent), alone_);
      QCOMPARE(out.tokens.at(run.child), alone_tail(k));
      QCOMPARE(out.requests.size(), size_t(1));  // the child is a sample of the parent's request
      QCOMPARE(out.index.at(run.parent), 0);
      QCOMPARE(out.index.at(run.child), 1);
      for (SequenceId s : {run.parent, run.child}) {
        QCOMPARE(out.finished.at(s).size(), size_t(1));
        QCOMPARE(out.finished.at(s)[0].reason, std::string("length"));
      }
      // The parent stores its prompt and all but its last sampled token.
      QCOMPARE(run.stored_at_fork, static_cast<int32_t>(prompt_.size()) + k - 1);

      // At the fork: every block of the parent held twice, and counted once.
      const int num_blocks = static_cast<int>(run.parent_table.size());
      QCOMPARE(num_blocks, (run.stored_at_fork + kBlockSize - 1) / kBlockSize);
      for (int32_t b : run.parent_table) {
        QCOMPARE(run.at_fork.blocks[b].ref_count, 2);
        QCOMPARE(run.at_fork.blocks[b].owners, (std::vector<SequenceId>{run.parent, run.child}));
      }
      int used_at_fork = 0;
      for (const KvBlockInfo& b : run.at_fork.blocks) used_at_fork += b.ref_count > 0;
      QCOMPARE(used_at_fork, run.used_before);

      // The fork's step: both compute the parent's last sampled token.
      const bool partial = run.stored_at_fork % kBlockSize != 0;
      const int64_t copies = run.after_fork_step.kv.num_cow_copies - run.cow_before;
      int num_cow_events = 0;
      for (const KvEvent& e : out.kv) {
        if (e.kind != KvEventKind::copy_on_write) continue;
        ++num_cow_events;
        QCOMPARE(e.seq, run.parent);
        QCOMPARE(e.block, run.parent_table.back());
      }
      QCOMPARE(copies, int64_t(partial ? 1 : 0));
      QCOMPARE(num_cow_events, partial ? 1 : 0);
      QCOMPARE(run.after_fork_step.kv.num_used_blocks, run.used_before + (partial ? 1 : 2));
      QCOMPARE(run.after_fork_step.kv.num_shared_blocks, run.stored_at_fork / kBlockSize);
      QCOMPARE(run.after_fork_step.num_running, 2);
      (partial ? saw_partial : saw_boundary) = true;

      // Nothing computed twice: the prompt once, each sequence's own decodes once.
      QCOMPARE(run.end.num_prefill_tokens, static_cast<int64_t>(prompt_.size()));
      QCOMPARE(run.end.num_recomputed_tokens, int64_t(0));
      QCOMPARE(run.end.num_decode_tokens, int64_t((kMaxTokens - 1) + (kMaxTokens - k)));
      QCOMPARE(run.end.num_generated, int64_t(kMaxTokens + (kMaxTokens - k)));
      QCOMPARE(run.end.kv.num_used_blocks, 0);
    }
    QVERIFY(saw_boundary && saw_partial);
  }

  void temperature_fork_is_reproducible() {
    // The child draws from its own generator (seeded from the parent's seed and its id): the
    // same commands give the same reply, and the parent's draws are those of a run unforked.
    Request r = greedy();
    r.params.temperature = 0.9f;
    r.params.seed = 77;
    Engine engine(*model_, *backend_, config());
    Outcome unforked;
    record(engine, unforked);
    engine.submit(r);
    while (engine.step()) {}
    ForkRun first = run_with_fork(r, 3), second = run_with_fork(r, 3);
    QVERIFY2(first.out.first_violation.empty(), first.out.first_violation.c_str());
    QCOMPARE(first.out.tokens.at(first.parent), unforked.tokens.begin()->second);
    QCOMPARE(first.out.tokens.at(first.child).size(), size_t(kMaxTokens - 3));
    QCOMPARE(second.child, first.child);
    QCOMPARE(second.out.tokens.at(second.child), first.out.tokens.at(first.child));
    QCOMPARE(second.out.tokens.at(second.parent), first.out.tokens.at(first.parent));
  }

  void fork_of_a_parent_that_parks_is_parked_too() {
    Request r = greedy();
    r.park_when_done = true;
    ForkRun run = run_with_fork(r, 2);
    QVERIFY2(run.out.first_violation.empty(), run.out.first_violation.c_str());
    QCOMPARE(run.out.tokens.at(run.child), alone_tail(2));
    for (SequenceId s : {run.parent, run.child}) QVERIFY(run.out.finished.at(s)[0].parked);
    QCOMPARE(run.end.num_parked, 2);
    // The blocks filled before the fork stay shared.
    QCOMPARE(run.end.kv.num_shared_blocks, run.stored_at_fork / kBlockSize);
  }

  void abort_ends_the_fork_too() {
    Engine engine(*model_, *backend_, config());
    Outcome out;
    record(engine, out);
    RequestId id = engine.submit(greedy());
    while (out.tokens.empty() || out.tokens.begin()->second.size() < 2) step_checked(engine, out);
    SequenceId parent = out.tokens.begin()->first;
    SequenceId child = engine.fork(parent);
    step_checked(engine, out);
    QCOMPARE(engine.stats().num_running, 2);
    engine.abort(id);
    QVERIFY(!engine.step());
    for (SequenceId s : {parent, child}) QCOMPARE(out.finished.at(s)[0].reason, std::string("abort"));
    QCOMPARE(engine.stats().kv.num_used_blocks, 0);
    QVERIFY2(out.first_violation.empty(), out.first_violation.c_str());
    QCOMPARE(engine.kv().check_invariants(), std::string());
  }

  void forks_that_cannot_happen_fail_alone() {
    // 4 tokens a step: the prompt is still being prefilled after the first step.
    EngineConfig c = config();
    c.max_batched_tokens = 4;
    QVERIFY(prompt_.size() > 4);
    Engine engine(*model_, *backend_, c);
    Outcome out;
    record(engine, out);
    RequestId id = engine.submit(greedy());
    step_checked(engine, out);
    SequenceId seq = -1;
    for (const KvEvent& e : out.kv)
      if (e.kind == KvEventKind::allocate) seq = e.seq;
    QVERIFY(seq >= 0);
    SequenceId prefilling = engine.fork(seq);
    SequenceId unknown = engine.fork(12345);
    step_checked(engine, out);
    QCOMPARE(out.errors.size(), size_t(2));
    QCOMPARE(out.errors[0].seq, prefilling);
    QVERIFY2(out.errors[0].reason.find("not computed yet") != std::string::npos, out.errors[0].reason.c_str());
    QCOMPARE(out.errors[1].seq, unknown);
    QVERIFY2(out.errors[1].reason.find("neither running nor parked") != std::string::npos, out.errors[1].reason.c_str());
    for (const EngineEvent& e : out.errors) QCOMPARE(e.request, RequestId(-1));  // the request goes on
    QVERIFY(!engine.kv().has_sequence(prefilling) && !engine.kv().has_sequence(unknown));
    QCOMPARE(engine.stats().num_running, 1);
    bool more = true;
    while (more) step_checked(engine, out, &more);
    SequenceId finished = engine.fork(seq);  // over and not parked
    QVERIFY(!engine.step());
    QCOMPARE(out.errors.size(), size_t(3));
    QCOMPARE(out.errors[2].seq, finished);
    QCOMPARE(out.tokens.size(), size_t(1));
    QCOMPARE(out.tokens.at(seq), alone_);
    QCOMPARE(out.finished.at(seq).size(), size_t(1));
    QCOMPARE(*out.requests.begin(), id);
    QCOMPARE(engine.stats().kv.num_used_blocks, 0);
    QVERIFY2(out.first_violation.empty(), out.first_violation.c_str());
  }
};

QTEST_APPLESS_MAIN(TestEngineFork)
#include "test_engine_fork.moc"
