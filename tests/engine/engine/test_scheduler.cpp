// The scheduler against a real KV manager, no model: decode tokens before prompt chunks, the
// token budget and the running cap, FCFS admission, prefix-cache starts, preemption of the
// latest arrival, parked sequences released for a new prompt, each chunk's slots as its
// block table gives them, and held sequences (slow clients) skipped and preempted first.

#include <QtTest>

#include <memory>
#include <numeric>

#include "engine/kv/kv_manager.h"
#include "engine/scheduler/scheduler.h"

using namespace pagedchat;

namespace {

std::vector<int32_t> tokens(int n, int32_t first) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

// Owns the sequences the scheduler points at.
struct Fixture {
  KvManager kv;
  Scheduler sched;
  std::vector<std::unique_ptr<SchedSequence>> seqs;

  Fixture(int num_blocks, int block_size, int budget, int max_seqs, int num_host_blocks = 0)
      : kv(KvManagerConfig{num_blocks, block_size, num_host_blocks}),
        sched({budget, max_seqs, num_host_blocks ? PreemptMode::swap : PreemptMode::recompute}) {}

  SchedSequence* add(std::vector<int32_t> t) {
    auto s = std::make_unique<SchedSequence>();
    s->id = static_cast<SequenceId>(seqs.size()) + 1;
    s->arrival = static_cast<uint64_t>(seqs.size());
    s->tokens = std::move(t);
    sched.add_waiting(s.get());
    seqs.push_back(std::move(s));
    return seqs.back().get();
  }
  // Three 8-token prompts prefilled in one step and sampled: in a pool of 6 blocks of 4 they
  // fill it, so their first decodes need a block more than there is.
  std::vector<SchedSequence*> fill_with_three_prompts() {
    std::vector<SchedSequence*> out{add(tokens(8, 100)), add(tokens(8, 200)), add(tokens(8, 300))};
    ScheduledStep s = sched.schedule(kv);
    if (s.chunks.size() != 3) qFatal("the three prompts were meant to start in one step");
    sample_all(s);
    return out;
  }
  // As the engine does after the forward: a sequence whose chunk reached its end samples.
  void sample_all(const ScheduledStep& step) {
    for (const ScheduledChunk& c : step.chunks)
      if (c.wants_logits()) c.seq->tokens.push_back(7);
  }
};

struct Chunk {
  SequenceId id;
  int start, n;
  bool decode;
  bool operator==(const Chunk&) const = default;
};

}  // namespace

namespace QTest {
template <>
char* toString(const std::vector<Chunk>& v) {
  QByteArray s;
  for (const Chunk& c : v) s += QString::asprintf("{%lld,%d,%d,%d} ", (long long)c.id, c.start, c.n, int(c.decode)).toUtf8();
  return qstrdup(s.constData());
}
}  // namespace QTest

namespace {

std::vector<Chunk> chunks(const ScheduledStep& step) {
  std::vector<Chunk> out;
  for (const ScheduledChunk& c : step.chunks) out.push_back({c.seq->id, c.start, c.num_tokens, c.is_decode});
  return out;
}

}  // namespace

class TestScheduler : public QObject {
  Q_OBJECT

 private slots:
  void decodes_come_before_prompt_chunks() {
    Fixture f(64, 4, /*budget=*/8, 8);
    f.add(tokens(3, 100));
    f.add(tokens(3, 200));
    f.add(tokens(20, 300));
    ScheduledStep s1 = f.sched.schedule(f.kv);
    QCOMPARE(chunks(s1), (std::vector<Chunk>{{1, 0, 3, false}, {2, 0, 3, false}, {3, 0, 2, false}}));
    QCOMPARE(s1.num_tokens, 8);
    f.sample_all(s1);
    ScheduledStep s2 = f.sched.schedule(f.kv);
    QCOMPARE(chunks(s2), (std::vector<Chunk>{{1, 3, 1, true}, {2, 3, 1, true}, {3, 2, 6, false}}));
    f.sample_all(s2);
    ScheduledStep s3 = f.sched.schedule(f.kv);
    QCOMPARE(chunks(s3), (std::vector<Chunk>{{1, 4, 1, true}, {2, 4, 1, true}, {3, 8, 6, false}}));
    QCOMPARE(f.kv.num_tokens(3), 14);
    QCOMPARE(f.kv.check_invariants(), std::string());
  }

  void running_cap_and_fcfs() {
    Fixture f(64, 4, 100, /*max_seqs=*/2);
    f.add(tokens(5, 100));
    f.add(tokens(5, 200));
    f.add(tokens(5, 300));
    ScheduledStep s = f.sched.schedule(f.kv);
    QCOMPARE(chunks(s), (std::vector<Chunk>{{1, 0, 5, false}, {2, 0, 5, false}}));
    QCOMPARE(f.sched.num_waiting(), 1);
    f.sched.remove(1);
    f.kv.free(1);
    f.sample_all(s);
    s = f.sched.schedule(f.kv);
    QCOMPARE(chunks(s), (std::vector<Chunk>{{2, 5, 1, true}, {3, 0, 5, false}}));
  }

  void first_waiting_blocks_later_ones() {
    // 6 blocks of 4: the 30-token prompt at the head does not fit beside the first one, and
    // the small prompt behind it waits too (no overtaking).
    Fixture f(6, 4, 100, 8);
    f.add(tokens(10, 100));
    f.add(tokens(20, 200));
    f.add(tokens(2, 300));
    ScheduledStep s = f.sched.schedule(f.kv);
    QCOMPARE(chunks(s), (std::vector<Chunk>{{1, 0, 10, false}}));
    QCOMPARE(f.sched.num_waiting(), 2);
  }

  void prompt_starts_on_cached_blocks() {
    Fixture f(64, 4, 100, 8);
    std::vector<int32_t> system = tokens(12, 500);
    std::vector<int32_t> a = system, b = system;
    a.push_back(1);
    b.insert(b.end(), {2, 3});
    f.add(a);
    ScheduledStep s = f.sched.schedule(f.kv);
    f.sched.remove(1);
    f.kv.free(1);
    f.add(b);
    s = f.sched.schedule(f.kv);
    QCOMPARE(chunks(s), (std::vector<Chunk>{{2, 12, 2, false}}));
    // The same prompt again: every block hits, so its last block is computed again.
    f.add(b);
    s = f.sched.schedule(f.kv);
    QCOMPARE(chunks(s), (std::vector<Chunk>{{3, 12, 2, false}}));
    f.add(system);
    s = f.sched.schedule(f.kv);
    QCOMPARE(chunks(s), (std::vector<Chunk>{{4, 8, 4, false}}));
  }

  void latest_arrival_is_preempted() {
    // 6 blocks of 4: three 8-token prompts fill 2 blocks each; their first decodes need a third.
    Fixture f(6, 4, 100, 8);
    f.add(tokens(8, 100));
    f.add(tokens(8, 200));
    SchedSequence* c = f.add(tokens(8, 300));
    ScheduledStep s = f.sched.schedule(f.kv);
    QCOMPARE(s.chunks.size(), size_t(3));
    QCOMPARE(f.kv.num_available_blocks(), 0);
    f.sample_all(s);
    s = f.sched.schedule(f.kv);
    QCOMPARE(s.preempted, (std::vector<SequenceId>{3}));
    QCOMPARE(chunks(s), (std::vector<Chunk>{{1, 8, 1, true}, {2, 8, 1, true}}));
    QVERIFY(!c->in_kv);
    QCOMPARE(c->num_computed, 0);
    QCOMPARE(c->num_recompute, 8);  // its K/V for 8 tokens was dropped
    QCOMPARE(f.sched.num_waiting(), 1);
    QCOMPARE(f.kv.stats().num_preemptions, int64_t(1));
    QCOMPARE(f.kv.check_invariants(), std::string());
    // Once a finishes, c comes back ahead of any later arrival, computed from the start: its
    // full blocks were cached at preemption, then evicted for a's and b's third blocks.
    f.sched.remove(1);
    f.kv.free(1);
    f.sample_all(s);
    f.add(tokens(2, 400));
    s = f.sched.schedule(f.kv);
    QCOMPARE(chunks(s), (std::vector<Chunk>{{2, 9, 1, true}, {3, 0, 9, false}}));
    // Of c's 9 tokens, 8 are recomputed; the 9th (its sampled token) is computed for the first time.
    QCOMPARE(s.chunks[0].num_recomputed, 0);
    QCOMPARE(s.chunks[1].num_recomputed, 8);
    QCOMPARE(f.sched.num_waiting(), 1);
  }

  void a_held_sequence_is_skipped_and_resumes_where_it_was() {
    Fixture f(64, 4, 100, 8);
    SchedSequence* a = f.add(tokens(5, 100));
    f.add(tokens(5, 200));
    ScheduledStep s = f.sched.schedule(f.kv);
    f.sample_all(s);
    a->held = true;
    for (int i = 0; i < 3; ++i) {
      s = f.sched.schedule(f.kv);
      QCOMPARE(chunks(s), (std::vector<Chunk>{{2, 5 + i, 1, true}}));
      f.sample_all(s);
    }
    QCOMPARE(a->num_computed, 5);
    QCOMPARE(f.kv.num_tokens(1), 5);  // its K/V kept
    // With only held work left, there is none to do (the engine's step loop must not spin).
    f.sched.remove(2);
    f.kv.free(2);
    QVERIFY(!f.sched.has_work());
    a->held = false;
    QVERIFY(f.sched.has_work());
    s = f.sched.schedule(f.kv);
    QCOMPARE(chunks(s), (std::vector<Chunk>{{1, 5, 1, true}}));
    QCOMPARE(f.kv.check_invariants(), std::string());
  }

  void a_held_sequence_is_preempted_before_a_later_arrival() {
    // As latest_arrival_is_preempted, but the first arrival is held: it goes, not the third.
    Fixture f(6, 4, 100, 8);
    const std::vector<SchedSequence*> seqs = f.fill_with_three_prompts();
    SchedSequence *a = seqs[0], *c = seqs[2];
    a->held = true;
    ScheduledStep s = f.sched.schedule(f.kv);
    QCOMPARE(s.preempted, (std::vector<SequenceId>{1}));
    QCOMPARE(chunks(s), (std::vector<Chunk>{{2, 8, 1, true}, {3, 8, 1, true}}));
    QVERIFY(!a->in_kv);
    QVERIFY(c->in_kv);
    // Held and waiting, it neither comes back nor holds up a later prompt behind it.
    f.sample_all(s);
    f.sched.remove(2);
    f.kv.free(2);
    f.add(tokens(3, 400));
    s = f.sched.schedule(f.kv);
    QCOMPARE(chunks(s), (std::vector<Chunk>{{3, 9, 1, true}, {4, 0, 3, false}}));
    QVERIFY(!a->in_kv);
    a->held = false;  // first in line again once its 3 blocks are free
    f.sample_all(s);
    f.sched.remove(3);
    f.kv.free(3);
    s = f.sched.schedule(f.kv);
    QCOMPARE(chunks(s), (std::vector<Chunk>{{4, 3, 1, true}, {1, 0, 9, false}}));
    QCOMPARE(s.chunks[1].num_recomputed, 8);
    QCOMPARE(f.kv.check_invariants(), std::string());
  }

  void a_held_swapped_sequence_stays_in_host_memory() {
    Fixture f(6, 4, 100, 8, /*num_host_blocks=*/8);
    SchedSequence* c = f.fill_with_three_prompts()[2];
    ScheduledStep s = f.sched.schedule(f.kv);
    QCOMPARE(s.swapped_out, (std::vector<SequenceId>{3}));
    c->held = true;
    f.sample_all(s);
    f.sched.remove(1);
    f.kv.free(1);
    f.add(tokens(3, 400));
    s = f.sched.schedule(f.kv);
    QVERIFY(s.swapped_in.empty());
    QVERIFY(c->swapped);
    QCOMPARE(chunks(s), (std::vector<Chunk>{{2, 9, 1, true}, {4, 0, 3, false}}));  // the new prompt is not held up
    c->held = false;
    f.sample_all(s);
    s = f.sched.schedule(f.kv);
    QCOMPARE(s.swapped_in, (std::vector<SequenceId>{3}));
    QCOMPARE(f.kv.check_invariants(), std::string());
  }

  void latest_arrival_is_swapped_out_and_back() {
    // As above with a host pool: c moves to the host pool with its 8 computed tokens, and
    // comes back before any new prompt once a finishes, to decode from where it stopped.
    Fixture f(6, 4, 100, 8, /*num_host_blocks=*/4);
    SchedSequence* c = f.fill_with_three_prompts()[2];
    ScheduledStep s = f.sched.schedule(f.kv);
    QCOMPARE(s.swapped_out, (std::vector<SequenceId>{3}));
    QVERIFY(s.preempted.empty());
    QCOMPARE(chunks(s), (std::vector<Chunk>{{1, 8, 1, true}, {2, 8, 1, true}}));
    QVERIFY(c->swapped && c->in_kv);
    QCOMPARE(f.kv.state(3), SequenceState::swapped);
    QCOMPARE(f.sched.num_swapped(), 1);
    f.sched.remove(1);
    f.kv.free(1);
    f.sample_all(s);
    f.add(tokens(2, 400));
    s = f.sched.schedule(f.kv);
    QCOMPARE(s.swapped_in, (std::vector<SequenceId>{3}));
    QCOMPARE(chunks(s), (std::vector<Chunk>{{2, 9, 1, true}, {3, 8, 1, true}}));
    QCOMPARE(f.sched.num_waiting(), 1);  // c took the blocks a left: the new prompt waits
    QCOMPARE(f.kv.check_invariants(), std::string());
  }

  void a_sequence_that_cannot_grow_preempts_itself() {
    // a arrived first and holds the pool; b (later) cannot grow, and there is nobody later
    // to preempt, so b goes back to waiting; a keeps running.
    Fixture f(4, 4, 100, 8);
    SchedSequence* a = f.add(tokens(8, 100));
    SchedSequence* b = f.add(tokens(8, 200));
    ScheduledStep s = f.sched.schedule(f.kv);
    QCOMPARE(s.chunks.size(), size_t(2));
    a->tokens.push_back(1);
    b->tokens.push_back(1);
    s = f.sched.schedule(f.kv);
    QCOMPARE(chunks(s), (std::vector<Chunk>{{1, 8, 1, true}}));
    QCOMPARE(s.preempted, (std::vector<SequenceId>{2}));
    QVERIFY(!b->in_kv);
    QCOMPARE(f.kv.check_invariants(), std::string());
  }

  void with_a_host_pool_it_swaps_itself_out() {
    // The same pool with host room: b, that cannot grow and has nobody later to preempt, goes
    // to the host (its tokens kept) instead of back to waiting; when a is gone it comes back.
    Fixture f(4, 4, 100, 8, /*num_host_blocks=*/8);
    SchedSequence* a = f.add(tokens(8, 100));
    SchedSequence* b = f.add(tokens(8, 200));
    ScheduledStep s = f.sched.schedule(f.kv);
    a->tokens.push_back(1);
    b->tokens.push_back(1);
    s = f.sched.schedule(f.kv);
    QCOMPARE(chunks(s), (std::vector<Chunk>{{1, 8, 1, true}}));
    QCOMPARE(s.swapped_out, (std::vector<SequenceId>{2}));
    QVERIFY(s.preempted.empty());
    QVERIFY(b->swapped && b->in_kv);
    QCOMPARE(b->num_computed, 8);  // nothing to compute again
    QCOMPARE(f.kv.check_invariants(), std::string());
    f.sched.remove(1);
    f.kv.free(1);
    s = f.sched.schedule(f.kv);
    QCOMPARE(s.swapped_in, (std::vector<SequenceId>{2}));
    QCOMPARE(chunks(s), (std::vector<Chunk>{{2, 8, 1, true}}));
    QCOMPARE(f.kv.check_invariants(), std::string());
  }

  void chunk_slots_are_the_block_tables() {
    // The engine writes a chunk's K/V at chunk.slot_mapping and attention reads through the
    // block tables: at the end of a step both must name the same slots, for prompt chunks, a
    // prefix-cache start, decodes and a copy-on-write after a fork.
    Fixture f(16, 4, /*budget=*/6, 8);
    auto check = [&](const ScheduledStep& s) {
      for (const ScheduledChunk& c : s.chunks) {
        std::vector<int64_t> want;
        f.kv.slot_mapping(c.seq->id, c.start, c.num_tokens, want);
        QCOMPARE(c.slot_mapping, want);
      }
    };
    SchedSequence* a = f.add(tokens(10, 100));
    f.add(tokens(9, 100));  // its first 8 tokens are a's
    ScheduledStep s = f.sched.schedule(f.kv);
    QCOMPARE(chunks(s), (std::vector<Chunk>{{1, 0, 6, false}}));
    check(s);
    s = f.sched.schedule(f.kv);
    QCOMPARE(chunks(s), (std::vector<Chunk>{{1, 6, 4, false}, {2, 8, 1, false}}));
    check(s);
    f.sample_all(s);
    s = f.sched.schedule(f.kv);
    QCOMPARE(chunks(s), (std::vector<Chunk>{{1, 10, 1, true}, {2, 9, 1, true}}));
    check(s);
    f.sample_all(s);
    // A fork of a shares its partial last block; both decodes then write their own copy.
    auto child = std::make_unique<SchedSequence>(*a);
    child->id = 3;
    f.kv.fork(a->id, child->id);
    f.sched.add_running(child.get());
    f.seqs.push_back(std::move(child));
    const int64_t cow_before = f.kv.stats().num_cow_copies;
    s = f.sched.schedule(f.kv);
    QCOMPARE(chunks(s), (std::vector<Chunk>{{1, 11, 1, true}, {3, 11, 1, true}, {2, 10, 1, true}}));
    QCOMPARE(f.kv.stats().num_cow_copies, cow_before + 1);
    check(s);
    QCOMPARE(f.kv.check_invariants(), std::string());
  }

  void parked_sequence_released_for_a_new_prompt() {
    Fixture f(4, 4, 100, 8);
    f.add(tokens(14, 100));
    ScheduledStep s = f.sched.schedule(f.kv);
    f.sched.remove(1);
    f.kv.park(1);
    QCOMPARE(f.kv.num_available_blocks(), 0);
    f.add(tokens(9, 200));
    s = f.sched.schedule(f.kv);
    QCOMPARE(s.reclaimed, (std::vector<SequenceId>{1}));
    QCOMPARE(chunks(s), (std::vector<Chunk>{{2, 0, 9, false}}));
    QVERIFY(!f.kv.has_sequence(1));
    QCOMPARE(f.kv.check_invariants(), std::string());
  }
};

QTEST_APPLESS_MAIN(TestScheduler)
#include "test_scheduler.moc"
