// The KV manager's mechanics with exact outcomes: slot mapping, copy-on-write forks, LRU
// eviction, the reclaim order under pressure, swapping, stats, snapshots and events.

#include <QtTest>

#include <algorithm>
#include <memory>
#include <numeric>

#include "engine/common/error.h"
#include "engine/kv/kv_manager.h"

using namespace pagedchat;

namespace {
std::vector<int32_t> iota_tokens(int32_t first, int32_t n) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

PrefixHit run_prompt(KvManager& kv, SequenceId seq, const std::vector<int32_t>& prompt) {
  PrefixHit hit = kv.find_prefix(prompt);
  kv.start(seq, hit);
  std::vector<int64_t> slot_mapping;
  kv.append(seq, std::span(prompt).subspan(hit.num_tokens), slot_mapping);
  return hit;
}

void append(KvManager& kv, SequenceId seq, const std::vector<int32_t>& tokens) {
  std::vector<int64_t> slot_mapping;
  kv.append(seq, tokens, slot_mapping);
}

std::vector<int32_t> table(const KvManager& kv, SequenceId seq) {
  std::span<const int32_t> t = kv.block_table(seq);
  return {t.begin(), t.end()};
}

std::vector<std::string> describe(const std::vector<KvEvent>& events) {
  std::vector<std::string> out;
  for (const KvEvent& e : events) {
    std::string s = std::string(kv_event_name(e.kind)) + " s" + std::to_string(e.seq);
    if (e.block >= 0) s += " b" + std::to_string(e.block) + " r" + std::to_string(e.ref_count) + " " + block_state_name(e.block_state);
    if (e.peer >= 0) s += " p" + std::to_string(e.peer);
    out.push_back(s);
  }
  return out;
}

bool same_transfers(const std::vector<BlockTransfer>& got, const std::vector<BlockTransfer>& want) {
  if (got.size() != want.size()) return false;
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i].kind != want[i].kind || got[i].src != want[i].src || got[i].dst != want[i].dst) return false;
  return true;
}

// Block size 4, 8 blocks, all used or cached: block 0 cached (seq 10 freed); seq 1 and seq 2
// parked in that order (blocks 1,2 and 3,4; blocks 2 and 4 partial); seq 3 and seq 4 running,
// arrived in that order (blocks 5,6 with 6 partial, and 7 partial).
std::unique_ptr<KvManager> pressure_scenario(int32_t num_host_blocks = 0) {
  auto kv = std::make_unique<KvManager>(KvManagerConfig{.num_blocks = 8, .block_size = 4, .num_host_blocks = num_host_blocks});
  run_prompt(*kv, 10, iota_tokens(1, 4));
  kv->free(10);
  run_prompt(*kv, 1, iota_tokens(11, 6));
  kv->park(1);
  run_prompt(*kv, 2, iota_tokens(21, 6));
  kv->park(2);
  run_prompt(*kv, 3, iota_tokens(31, 5));
  run_prompt(*kv, 4, iota_tokens(41, 2));
  kv->take_events();
  kv->take_transfers();
  return kv;
}
}  // namespace

class TestKvManager : public QObject {
  Q_OBJECT
 private slots:
  void slotMappingFollowsTheBlockTable() {
    KvManager kv({.num_blocks = 8, .block_size = 4});
    kv.start(1, kv.find_prefix({}));
    kv.start(2, kv.find_prefix({}));
    std::vector<int64_t> slot_mapping;
    kv.append(1, std::vector<int32_t>{10, 11}, slot_mapping);
    kv.append(2, iota_tokens(20, 5), slot_mapping);
    kv.append(1, std::vector<int32_t>{12, 13, 14}, slot_mapping);
    QCOMPARE(slot_mapping, (std::vector<int64_t>{0, 1, 4, 5, 6, 7, 8, 2, 3, 12}));
    QCOMPARE(table(kv, 1), (std::vector<int32_t>{0, 3}));
    std::vector<int64_t> again;
    kv.slot_mapping(1, 0, 5, again);
    QCOMPARE(again, (std::vector<int64_t>{0, 1, 2, 3, 12}));
    QCOMPARE(kv.stored_tokens(1), (std::vector<int32_t>{10, 11, 12, 13, 14}));
  }

  void forkSharesThePartialBlockAndCopiesOnceOnFirstWrite() {
    for (int first_writer : {1, 2}) {
      int second = 3 - first_writer;
      KvManager kv({.num_blocks = 8, .block_size = 4});
      run_prompt(kv, 1, iota_tokens(1, 6));  // blocks 0 (full) and 1 (2 tokens)
      kv.fork(1, 2);
      QCOMPARE(table(kv, 2), table(kv, 1));
      KvSnapshot snap = kv.snapshot();
      QCOMPARE(snap.blocks[1].ref_count, 2);
      QCOMPARE(snap.blocks[1].owners, (std::vector<SequenceId>{1, 2}));
      QCOMPARE(kv.num_used_blocks(), 2);
      kv.take_transfers();
      QCOMPARE(kv.num_blocks_to_append(first_writer, 1), 1);
      QCOMPARE(kv.num_blocks_to_append(second, 1), 1);

      append(kv, first_writer, {7});
      QVERIFY(same_transfers(kv.take_transfers(), {{TransferKind::copy, 1, 2}}));
      QCOMPARE(table(kv, first_writer), (std::vector<int32_t>{0, 2}));
      QCOMPARE(kv.stored_tokens(first_writer), iota_tokens(1, 7));
      QCOMPARE(kv.num_blocks_to_append(second, 1), 0);  // the old block is its alone now

      append(kv, second, {70});
      append(kv, first_writer, {8});
      append(kv, second, {71});
      QVERIFY(kv.take_transfers().empty());
      QCOMPARE(table(kv, second), (std::vector<int32_t>{0, 1}));
      QCOMPARE(kv.stored_tokens(second), (std::vector<int32_t>{1, 2, 3, 4, 5, 6, 70, 71}));
      QCOMPARE(kv.stats().num_cow_copies, int64_t(1));
      QVERIFY(kv.check_invariants().empty());
    }
  }

  void forkAtABlockBoundaryCopiesNothing() {
    KvManager kv({.num_blocks = 8, .block_size = 4});
    run_prompt(kv, 1, iota_tokens(1, 8));
    kv.fork(1, 2);
    QCOMPARE(kv.num_blocks_to_append(2, 1), 1);  // a new block, no copy
    append(kv, 2, {9});
    append(kv, 1, {10});
    QVERIFY(kv.take_transfers().empty());
    QCOMPARE(table(kv, 1), (std::vector<int32_t>{0, 1, 3}));
    QCOMPARE(table(kv, 2), (std::vector<int32_t>{0, 1, 2}));
  }

  void aParkedSequenceCanBeForked() {
    KvManager kv({.num_blocks = 8, .block_size = 4});
    run_prompt(kv, 1, iota_tokens(1, 5));
    kv.park(1);
    kv.fork(1, 2);
    QCOMPARE(kv.state(1), SequenceState::parked);
    QCOMPARE(kv.state(2), SequenceState::running);
    append(kv, 2, {50});
    QCOMPARE(kv.stats().num_cow_copies, int64_t(1));
    kv.resume(1);
    append(kv, 1, {6});
    QCOMPARE(kv.stored_tokens(1), iota_tokens(1, 6));
    QCOMPARE(kv.stored_tokens(2), (std::vector<int32_t>{1, 2, 3, 4, 5, 50}));
    QVERIFY(kv.check_invariants().empty());
  }

  void freeingPutsTheTailBeforeThePrefixInTheLruList() {
    KvManager kv({.num_blocks = 8, .block_size = 4});
    run_prompt(kv, 1, iota_tokens(1, 9));  // blocks 0, 1 full; 2 partial
    kv.free(1);
    QCOMPARE(kv.snapshot().cached_lru, (std::vector<int32_t>{1, 0}));
    QCOMPARE(kv.num_free_blocks(), 6);
  }

  void cachedBlocksAreEvictedLeastRecentlyUsedFirst() {
    KvManager kv({.num_blocks = 6, .block_size = 4});
    run_prompt(kv, 1, iota_tokens(1, 4));   // block 0
    run_prompt(kv, 2, iota_tokens(11, 4));  // block 1
    run_prompt(kv, 3, iota_tokens(21, 4));  // block 2
    kv.free(2);
    kv.free(1);
    kv.free(3);
    QCOMPARE(kv.snapshot().cached_lru, (std::vector<int32_t>{1, 0, 2}));
    // A hit revives block 0 out of the middle of the list.
    QCOMPARE(run_prompt(kv, 4, iota_tokens(1, 5)).num_revived, 1);
    QCOMPARE(kv.snapshot().cached_lru, (std::vector<int32_t>{1, 2}));
    QCOMPARE(table(kv, 4), (std::vector<int32_t>{0, 3}));
    run_prompt(kv, 5, iota_tokens(31, 8));  // the free blocks 4 and 5
    QCOMPARE(kv.num_free_blocks(), 0);
    kv.take_events();

    append(kv, 5, {39});  // evicts block 1, the least recently used
    QCOMPARE(table(kv, 5), (std::vector<int32_t>{4, 5, 1}));
    QCOMPARE(describe(kv.take_events()), (std::vector<std::string>{"evict s-1 b1 r0 free", "allocate s5 b1 r1 in_use"}));
    run_prompt(kv, 6, {60});  // then block 2
    QCOMPARE(table(kv, 6), (std::vector<int32_t>{2}));
    QCOMPARE(kv.find_prefix(iota_tokens(11, 5)).num_tokens, 0);  // block 1's content is gone
    QCOMPARE(kv.stats().num_evictions, int64_t(2));
    QVERIFY(kv.check_invariants().empty());
  }

  void reclaimReleasesParkedLeastRecentlyUsedFirst() {
    auto kv = pressure_scenario();
    QCOMPARE(kv->num_free_blocks(), 0);
    QCOMPARE(kv->num_cached_blocks(), 1);
    std::vector<SequenceId> running = {3, 4};

    ReclaimPlan one = kv->plan_reclaim(1, running, PreemptMode::recompute);
    QCOMPARE(one.reclaim, (std::vector<SequenceId>{1}));
    QVERIFY(one.preempt.empty() && one.swap_out.empty());
    QCOMPARE(one.num_free_after, 1);
    QCOMPARE(one.num_available_after, 3);
    QVERIFY(one.enough);

    // Both parked go before any cached block is counted on.
    ReclaimPlan three = kv->plan_reclaim(3, running, PreemptMode::recompute);
    QCOMPARE(three.reclaim, (std::vector<SequenceId>{1, 2}));
    QVERIFY(three.preempt.empty());
    QCOMPARE(three.num_free_after, 2);
    QCOMPARE(three.num_available_after, 5);

    // Then the running sequences, latest arrival first.
    ReclaimPlan seven = kv->plan_reclaim(7, running, PreemptMode::recompute);
    QCOMPARE(seven.reclaim, (std::vector<SequenceId>{1, 2}));
    QCOMPARE(seven.preempt, (std::vector<SequenceId>{4, 3}));
    QCOMPARE(seven.num_free_after, 4);
    QCOMPARE(seven.num_available_after, 8);
    QVERIFY(seven.enough);
    QVERIFY(!kv->plan_reclaim(9, running, PreemptMode::recompute).enough);

    kv->apply(three);
    QVERIFY(!kv->has_sequence(1) && !kv->has_sequence(2));
    QCOMPARE(kv->num_free_blocks(), 2);
    QCOMPARE(kv->num_cached_blocks(), 3);
    QCOMPARE(kv->snapshot().cached_lru, (std::vector<int32_t>{0, 1, 3}));  // older cached content first
    QCOMPARE(kv->stats().num_reclaims, int64_t(2));
    std::vector<std::string> events = describe(kv->take_events());
    QCOMPARE(events.front(), std::string("reclaim s1"));
    QVERIFY(std::find(events.begin(), events.end(), "reclaim s2") != events.end());

    // The free blocks go first, then the least recently used cached block.
    run_prompt(*kv, 5, iota_tokens(51, 12));
    QCOMPARE(table(*kv, 5), (std::vector<int32_t>{2, 4, 0}));
    QVERIFY(kv->check_invariants().empty());
  }

  void preemptionFreesTheLatestArrivalForRecompute() {
    auto kv = pressure_scenario();
    kv->apply(kv->plan_reclaim(7, std::vector<SequenceId>{3, 4}, PreemptMode::recompute));
    QVERIFY(!kv->has_sequence(3) && !kv->has_sequence(4));
    QCOMPARE(kv->stats().num_preemptions, int64_t(2));
    std::vector<std::string> events = describe(kv->take_events());
    auto at = [&](const char* e) { return std::find(events.begin(), events.end(), e) - events.begin(); };
    QVERIFY(at("preempt s4") < at("preempt s3"));
    QVERIFY(at("preempt s3") < static_cast<ptrdiff_t>(events.size()));
    // Its full block stays cached: the recompute finds it.
    QCOMPARE(kv->find_prefix(iota_tokens(31, 5)).num_tokens, 4);
    QVERIFY(kv->check_invariants().empty());
  }

  void swapOutAndBackThroughTheHostPool() {
    KvManager kv({.num_blocks = 8, .block_size = 4, .num_host_blocks = 4});
    run_prompt(kv, 1, iota_tokens(1, 6));  // blocks 0 (full), 1 (partial)
    kv.take_transfers();
    QVERIFY(kv.can_swap_out(1));
    kv.swap_out(1);
    QVERIFY(same_transfers(kv.take_transfers(), {{TransferKind::swap_out, 0, 0}, {TransferKind::swap_out, 1, 1}}));
    QCOMPARE(kv.state(1), SequenceState::swapped);
    QCOMPARE(table(kv, 1), (std::vector<int32_t>{0, 1}));  // host ids
    QCOMPARE(kv.num_free_host_blocks(), 2);
    QCOMPARE(kv.num_cached_blocks(), 1);  // the full block's content stays on the device
    QCOMPARE(kv.num_free_blocks(), 7);
    QCOMPARE(kv.stored_tokens(1), iota_tokens(1, 6));
    KvSnapshot snap = kv.snapshot();
    QCOMPARE(snap.host_blocks[1].state, BlockState::swapped);
    QCOMPARE(snap.host_blocks[1].num_filled, 2);
    QCOMPARE(snap.host_blocks[1].owners, (std::vector<SequenceId>{1}));

    // Back in: the cached full block is revived instead of copied.
    QCOMPARE(kv.num_blocks_to_swap_in(1), 2);
    kv.swap_in(1);
    QVERIFY(same_transfers(kv.take_transfers(), {{TransferKind::swap_in, 1, 2}}));
    QCOMPARE(table(kv, 1), (std::vector<int32_t>{0, 2}));
    QCOMPARE(kv.state(1), SequenceState::running);
    QCOMPARE(kv.num_free_host_blocks(), 4);
    append(kv, 1, {7, 8, 9});
    QCOMPARE(kv.stored_tokens(1), iota_tokens(1, 9));

    // Out again with its content evicted meanwhile: every block comes back by copy.
    kv.swap_out(1);
    QCOMPARE(kv.evict_cached(8), 2);
    kv.take_transfers();
    kv.swap_in(1);
    QCOMPARE(kv.take_transfers().size(), size_t(3));
    QCOMPARE(kv.stored_tokens(1), iota_tokens(1, 9));
    QCOMPARE(kv.stats().num_swap_outs, int64_t(2));
    QCOMPARE(kv.stats().num_swap_ins, int64_t(2));
    QVERIFY(kv.check_invariants().empty());
  }

  void swapInSharesWhatAForkStillHolds() {
    KvManager kv({.num_blocks = 8, .block_size = 4, .num_host_blocks = 4});
    run_prompt(kv, 1, iota_tokens(1, 9));  // blocks 0, 1 full; 2 partial
    kv.fork(1, 2);
    kv.swap_out(1);
    QCOMPARE(kv.num_used_blocks(), 3);  // all still held by the fork
    QCOMPARE(kv.num_blocks_to_swap_in(1), 1);  // only the partial block is copied back
    kv.take_transfers();
    kv.swap_in(1);
    QCOMPARE(kv.take_transfers().size(), size_t(1));
    QCOMPARE(kv.block_table(1)[0], kv.block_table(2)[0]);
    QCOMPARE(kv.block_table(1)[1], kv.block_table(2)[1]);
    QVERIFY(kv.block_table(1)[2] != kv.block_table(2)[2]);
    QVERIFY(kv.check_invariants().empty());
  }

  void swapModePreemptsWhenTheHostPoolIsFull() {
    auto kv = pressure_scenario(2);  // room for seq 4's block, then not for seq 3's two
    ReclaimPlan plan = kv->plan_reclaim(7, std::vector<SequenceId>{3, 4}, PreemptMode::swap);
    QCOMPARE(plan.swap_out, (std::vector<SequenceId>{4}));
    QCOMPARE(plan.preempt, (std::vector<SequenceId>{3}));
    kv->apply(plan);
    QCOMPARE(kv->state(4), SequenceState::swapped);
    QVERIFY(!kv->has_sequence(3));
    QCOMPARE(kv->num_available_blocks(), 8);
    QVERIFY(kv->check_invariants().empty());
  }

  void numBlocksFreedByCountsOnlyUnsharedBlocks() {
    KvManager kv({.num_blocks = 8, .block_size = 4});
    run_prompt(kv, 1, iota_tokens(1, 6));
    kv.fork(1, 2);
    append(kv, 2, {7});  // 2 now has its own copy of the partial block
    QCOMPARE(kv.num_blocks_freed_by(std::vector<SequenceId>{1}), 1);
    QCOMPARE(kv.num_blocks_freed_by(std::vector<SequenceId>{2}), 1);
    QCOMPARE(kv.num_blocks_freed_by(std::vector<SequenceId>{1, 2}), 3);
  }

  void fitsEverAndBadConfigurations() {
    KvManager kv({.num_blocks = 10, .block_size = 16});
    QVERIFY(kv.fits_ever(0));
    QVERIFY(kv.fits_ever(160));
    QVERIFY(!kv.fits_ever(161));
    QVERIFY(!kv.fits_ever(int64_t(1) << 40));
    for (int32_t bs : {1, 2, 4, 8, 16, 32}) QCOMPARE(KvManager({.num_blocks = 1, .block_size = bs}).block_size(), bs);
    QVERIFY_THROWS_EXCEPTION(Error, KvManager({.num_blocks = 10, .block_size = 3}));
    QVERIFY_THROWS_EXCEPTION(Error, KvManager({.num_blocks = 10, .block_size = 64}));
    QVERIFY_THROWS_EXCEPTION(Error, KvManager({.num_blocks = 0, .block_size = 16}));
    QVERIFY_THROWS_EXCEPTION(Error, KvManager({.num_blocks = 10, .block_size = 16, .num_host_blocks = -1}));
    QVERIFY_THROWS_EXCEPTION(Error, KvManager({.num_blocks = 1 << 30, .block_size = 16}));
  }

  void statsOnAHandComputedScenario() {
    KvManager kv({.num_blocks = 10, .block_size = 4});
    run_prompt(kv, 1, iota_tokens(1, 10));  // blocks 0, 1 full; 2 holds 2
    std::vector<int32_t> b = iota_tokens(1, 8);
    b.insert(b.end(), {20, 21, 22});
    run_prompt(kv, 2, b);  // hits 0, 1; block 3 holds 3
    kv.fork(1, 3);         // shares 0, 1, 2
    KvStats st = kv.stats(1000);
    QCOMPARE(st.num_used_blocks, 4);
    QCOMPARE(st.num_free_blocks, 6);
    QCOMPARE(st.num_cached_blocks, 0);
    QCOMPARE(st.num_tokens_stored, int64_t(4 + 4 + 2 + 3));
    QCOMPARE(st.num_empty_slots, int64_t(2 + 1));
    QCOMPARE(st.num_shared_blocks, 3);
    QCOMPARE(st.num_shared_refs, int64_t(2 + 2 + 1));  // refs 3, 3, 2
    QCOMPARE(st.bytes_saved_by_sharing, uint64_t(5000));
    QCOMPARE(st.prefix_lookup_tokens, int64_t(21));
    QCOMPARE(st.prefix_hit_tokens, int64_t(8));
    QCOMPARE(st.num_running, 3);
    QCOMPARE(st.num_allocations, int64_t(4));

    append(kv, 3, {11});  // copy-on-write of block 2 into block 4
    kv.park(2);
    kv.free(1);  // block 2 freed; 0 and 1 still shared by 2 and 3
    st = kv.stats(1000);
    QCOMPARE(st.num_used_blocks, 4);
    QCOMPARE(st.num_tokens_stored, int64_t(4 + 4 + 3 + 3));
    QCOMPARE(st.num_empty_slots, int64_t(1 + 1));
    QCOMPARE(st.fragmentation(), 2.0 / 16.0);
    QCOMPARE(st.num_shared_refs, int64_t(2));
    QCOMPARE(st.num_cow_copies, int64_t(1));
    QCOMPARE(st.num_running, 1);
    QCOMPARE(st.num_parked, 1);
    QCOMPARE(st.num_allocations, int64_t(5));
  }

  void snapshotShowsStatesRefsAndOwners() {
    KvManager kv({.num_blocks = 6, .block_size = 4, .num_host_blocks = 2});
    run_prompt(kv, 1, iota_tokens(1, 6));  // blocks 0, 1
    kv.fork(1, 2);
    run_prompt(kv, 3, iota_tokens(11, 4));  // block 2
    kv.free(3);                             // block 2 cached
    run_prompt(kv, 4, {7});                 // block 3
    kv.swap_out(4);                         // host block 0; block 3 free again
    KvSnapshot snap = kv.snapshot();
    QCOMPARE(snap.block_size, 4);
    QCOMPARE(snap.blocks.size(), size_t(6));
    const KvBlockInfo& full = snap.blocks[0];
    QCOMPARE(full.state, BlockState::in_use);
    QCOMPARE(full.ref_count, 2);
    QCOMPARE(full.num_filled, 4);
    QVERIFY(full.has_hash && full.in_prefix_cache);
    QCOMPARE(full.owners, (std::vector<SequenceId>{1, 2}));
    QCOMPARE(snap.blocks[1].num_filled, 2);
    QVERIFY(!snap.blocks[1].has_hash);
    QCOMPARE(snap.blocks[2].state, BlockState::cached);
    QCOMPARE(snap.blocks[2].ref_count, 0);
    QVERIFY(snap.blocks[2].owners.empty() && snap.blocks[2].in_prefix_cache);
    QCOMPARE(snap.blocks[3].state, BlockState::free);
    QCOMPARE(snap.blocks[3].num_filled, 0);
    QCOMPARE(snap.cached_lru, (std::vector<int32_t>{2}));
    QCOMPARE(snap.host_blocks[0].state, BlockState::swapped);
    QCOMPARE(snap.host_blocks[0].owners, (std::vector<SequenceId>{4}));
    QCOMPARE(snap.host_blocks[1].state, BlockState::free);
  }

  void eventsRecordEveryChange() {
    KvManager kv({.num_blocks = 4, .block_size = 4});
    run_prompt(kv, 1, iota_tokens(1, 5));
    kv.fork(1, 2);
    append(kv, 2, {6});
    kv.park(1);
    kv.resume(1);
    kv.free(2);
    std::vector<KvEvent> seen;
    kv.set_event_sink([&](const KvEvent& e) { seen.push_back(e); });
    kv.free(1);
    QCOMPARE(describe(kv.take_events()), (std::vector<std::string>{
        "allocate s1 b0 r1 in_use", "allocate s1 b1 r1 in_use",
        "fork s2 p1", "share s2 b0 r2 in_use", "share s2 b1 r2 in_use",
        "allocate s2 b2 r1 in_use", "copy_on_write s2 b1 r2 in_use p2", "free s2 b1 r1 in_use",
        "park s1", "resume s1",
        "finish s2", "free s2 b2 r0 free", "free s2 b0 r1 in_use"}));
    QCOMPARE(describe(seen), (std::vector<std::string>{"finish s1", "free s1 b1 r0 free", "free s1 b0 r0 cached"}));
  }

  void discardDropsTheContentOfUncomputedBlocks() {
    KvManager kv({.num_blocks = 4, .block_size = 4});
    run_prompt(kv, 1, iota_tokens(1, 8));
    kv.discard(1);
    QCOMPARE(kv.num_cached_blocks(), 0);
    QCOMPARE(kv.num_free_blocks(), 4);
    QCOMPARE(kv.find_prefix(iota_tokens(1, 9)).num_tokens, 0);
    QVERIFY(kv.check_invariants().empty());
  }
};

QTEST_APPLESS_MAIN(TestKvManager)
#include "test_kv_manager.moc"
