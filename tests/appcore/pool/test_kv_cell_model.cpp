// The block-pool view's pure parts, without painting: the per-cell display records, the text a
// hovered cell shows, the live numbers, which cells events flash and how flashes fade, and the
// cell geometry. Frames are built by hand and read from a real KvManager.

#include <QtTest>

#include "engine/kv/kv_manager.h"
#include "appcore/pool/kv_cell_model.h"
#include "appcore/pool/kv_flashes.h"
#include "appcore/pool/kv_grid_layout.h"
#include "appcore/pool/kv_pool_numbers.h"
#include "support/kv_test_frames.h"

using namespace pagedchat;
using namespace kvtest;

class TestKvCellModel : public QObject {
  Q_OBJECT
 private slots:
  void handFrameCellsHaveTheirStatesAndChatColours() {
    const PoolFrame f = handFrame();
    const KvCellModel m = buildKvCellModel(f);
    QCOMPARE(m.cells.size(), size_t(8));
    QCOMPARE(m.hostCells.size(), size_t(2));
    QCOMPARE(m.cells[0].kind, KvCellKind::InUse);
    QCOMPARE(m.cells[0].colorIndex, 0);
    QCOMPARE(m.cells[1].kind, KvCellKind::Shared);
    QCOMPARE(m.cells[1].refCount, 2);
    QCOMPARE(m.cells[1].colorIndex, 0);  // the first owner's (seq 1) colour
    QCOMPARE(m.cells[2].kind, KvCellKind::InUse);
    QCOMPARE(m.cells[2].colorIndex, 1);
    QCOMPARE(m.cells[3].kind, KvCellKind::Cached);
    QCOMPARE(m.cells[3].colorIndex, -1);
    QCOMPARE(m.cells[4].kind, KvCellKind::Free);
    QCOMPARE(m.hostCells[0].kind, KvCellKind::Swapped);
    QCOMPARE(m.hostCells[0].colorIndex, 2);
    QCOMPARE(m.hostCells[1].kind, KvCellKind::Free);
    // The count is drawn on a shared cell only.
    QCOMPARE(kvCellLabel(m.cells[1]), QStringLiteral("2"));
    QVERIFY(kvCellLabel(m.cells[0]).isEmpty());
    QVERIFY(kvCellLabel(m.cells[3]).isEmpty());
  }

  // Sliding window (Gemma 3's local layers): with a window of 2, Alpha (6 tokens) has left its
  // block 0, Beta (5 tokens, table {1, 2}) its block 1; block 1 is Alpha's too, whose window
  // still reaches it, so only block 0 is outside every owner's window.
  void blocksEveryOwnerSlidPastAreOutsideTheWindow() {
    QCOMPARE(kvBlocksOutsideWindow(6, 2, 4), 1);
    QCOMPARE(kvBlocksOutsideWindow(7, 4, 4), 1);   // the next token (7) sees 4..7: block 0 is behind it
    QCOMPARE(kvBlocksOutsideWindow(6, 4, 4), 0);   // ... token 6 sees 3..6, a slot of block 0
    QCOMPARE(kvBlocksOutsideWindow(1000, 0, 16), 0);
    QCOMPARE(kvBlocksOutsideWindow(1007, 512, 16), 31);
    PoolFrame f = kvtest::handFrame();
    QVERIFY(!buildKvCellModel(f).cells[0].outsideWindow);  // no window: nothing is outside
    f.slidingWindow = {2, 5, 6};
    const KvCellModel m = buildKvCellModel(f);
    std::vector<int> outside;
    for (size_t i = 0; i < m.cells.size(); ++i)
      if (m.cells[i].outsideWindow) outside.push_back(static_cast<int>(i));
    QCOMPARE(outside, std::vector<int>{0});
    QVERIFY(kvBlockDescription(f, m, 0, false).contains(QStringLiteral("Outside the sliding window (2 tokens): only the global layers (1 of 6) read it")));
    QVERIFY(!kvBlockDescription(f, m, 1, false).contains(QStringLiteral("Outside")));
    QCOMPARE(computeKvPoolNumbers(f).numOutsideWindow, 1);
  }

  void anOwnerTheFrameDoesNotListGetsNoChatColour() {
    PoolFrame f = handFrame();
    f.sequences.erase(f.sequences.begin());  // seq 1 unknown
    const KvCellModel m = buildKvCellModel(f);
    QCOMPARE(m.cells[0].colorIndex, -1);
    QCOMPARE(m.cells[1].colorIndex, 1);  // seq 2 is the first known owner
    QVERIFY(kvBlockTokens(f, m, 0, false).empty());
  }

  void hoverTextNamesTheBlockAndItsTokens() {
    const PoolFrame f = handFrame();
    const KvCellModel m = buildKvCellModel(f);
    const QString d0 = kvBlockDescription(f, m, 0, false);
    QVERIFY2(d0.contains(QStringLiteral("Block 0")), qPrintable(d0));
    QVERIFY2(d0.contains(QStringLiteral("State: in use")), qPrintable(d0));
    QVERIFY2(d0.contains(QStringLiteral("Ref count: 1")), qPrintable(d0));
    QVERIFY2(d0.contains(QStringLiteral("Owners: Alpha (seq 1)")), qPrintable(d0));
    QVERIFY2(d0.contains(QStringLiteral("Filled: 4 / 4")), qPrintable(d0));
    QVERIFY2(d0.contains(QStringLiteral("In prefix cache: yes")), qPrintable(d0));
    QVERIFY2(d0.contains(QStringLiteral("w10 w11 w12 w13")), qPrintable(d0));
    const QString d1 = kvBlockDescription(f, m, 1, false);
    QVERIFY2(d1.contains(QStringLiteral("Owners: Alpha (seq 1), Beta (seq 2)")), qPrintable(d1));
    QVERIFY2(d1.contains(QStringLiteral("\u201cw14 w15\u201d")), qPrintable(d1));  // the partial block's 2 tokens
    QVERIFY2(d1.contains(QStringLiteral("In prefix cache: no")), qPrintable(d1));
    const QString host = kvBlockDescription(f, m, 0, true);
    QVERIFY2(host.contains(QStringLiteral("Host block 0")), qPrintable(host));
    QVERIFY2(host.contains(QStringLiteral("w30 w31 w32")), qPrintable(host));
    QVERIFY(kvBlockDescription(f, m, 8, false).isEmpty());
    QVERIFY2(!d0.contains(QStringLiteral("On disk")), qPrintable(d0));
  }

  // A block the disk tier holds a copy of is marked so, and its hover text says it.
  void aBlockOnDiskIsMarked() {
    PoolFrame f = handFrame();
    f.snapshot.blocks[0].on_disk = true;
    const KvCellModel m = buildKvCellModel(f);
    QVERIFY(m.cells[0].onDisk);
    QVERIFY(!m.cells[1].onDisk);
    const QString d0 = kvBlockDescription(f, m, 0, false);
    QVERIFY2(d0.contains(QStringLiteral("On disk too")), qPrintable(d0));
  }

  // The disk strip: a cell per block of the chats' histories on disk, in the first chat's colour,
  // faded while only on disk, its count the chats whose histories start with it; hovering says
  // whose it is, where, whether the pool holds it, and its text.
  void theDiskStripShowsTheChatsBlocksOnDisk() {
    PoolFrame f = handFrame();
    f.numDiskModelBlocks = 7;
    PoolFrameDiskBlock shared;
    shared.chats = {3, 1004};
    shared.titles = {QStringLiteral("Chat A"), QStringLiteral("Chat B")};
    shared.index = 0;
    shared.tokens = {1, 2, 3, 4};
    shared.poolBlock = 5;
    PoolFrameDiskBlock only;
    only.chats = {1004};
    only.titles = {QStringLiteral("Chat B")};
    only.index = 1;
    only.tokens = {5, 6, 7, 8};
    f.diskBlocks = {shared, only};
    const KvCellModel m = buildKvCellModel(f);
    QCOMPARE(m.diskCells.size(), size_t(2));
    QCOMPARE(m.diskCells[0].kind, KvCellKind::OnDisk);
    QCOMPARE(m.diskCells[0].colorIndex, 3);
    QCOMPARE(m.diskCells[0].refCount, 2);
    QVERIFY(m.diskCells[0].alsoInPool && !m.diskCells[0].faded());
    QCOMPARE(kvCellLabel(m.diskCells[0]), QStringLiteral("2"));
    QCOMPARE(m.diskCells[1].colorIndex, 4);  // chat 1004's colour, as its sequences get (id % 1000)
    QVERIFY(!m.diskCells[1].alsoInPool && m.diskCells[1].faded());
    QVERIFY(kvCellLabel(m.diskCells[1]).isEmpty());
    const QString first = kvDiskBlockDescription(f, 0);
    QVERIFY2(first.contains(QStringLiteral("block 0 of a chat's history (tokens 0-3)")), qPrintable(first));
    QVERIFY2(first.contains(QStringLiteral("Chats: Chat A, Chat B")), qPrintable(first));
    QVERIFY2(first.contains(QStringLiteral("In the pool too: block 5")), qPrintable(first));
    const QString second = kvDiskBlockDescription(f, 1);
    QVERIFY2(second.contains(QStringLiteral("tokens 4-7")) && second.contains(QStringLiteral("Only on disk")), qPrintable(second));
    QVERIFY2(second.contains(QStringLiteral("Text: \u201cw5 w6 w7 w8\u201d")), qPrintable(second));  // the hand frame's detokenizer
    QVERIFY(kvDiskBlockDescription(f, 2).isEmpty());
    QVERIFY(kvDiskBlockDescription(f, -1).isEmpty());
  }

  void realManagerFrameMatchesTheSnapshotAndTheTokens() {
    KvManager kv({.num_blocks = 16, .block_size = 4});
    runPrompt(kv, 1, iota(1, 6));  // blocks 0 (full), 1 (2 tokens)
    kv.fork(1, 2);                 // both shared, ref 2
    const PoolFrame f = frameFrom(kv, {{1, "Parent", 0}, {2, "Fork", 3}});
    const KvCellModel m = buildKvCellModel(f);
    const KvSnapshot& snap = f.snapshot;
    for (size_t b = 0; b < snap.blocks.size(); ++b) {
      const KvBlockInfo& info = snap.blocks[b];
      const KvCellKind want = info.state == BlockState::free     ? KvCellKind::Free
                              : info.state == BlockState::cached ? KvCellKind::Cached
                              : info.ref_count > 1               ? KvCellKind::Shared
                                                                 : KvCellKind::InUse;
      QCOMPARE(m.cells[b].kind, want);
    }
    const std::vector<int32_t> table = f.sequences[0].blockTable;
    QCOMPARE(table.size(), size_t(2));
    QCOMPARE(m.cells[table[0]].kind, KvCellKind::Shared);
    QCOMPARE(m.cells[table[1]].refCount, 2);
    QCOMPARE(kvCellLabel(m.cells[table[1]]), QStringLiteral("2"));
    QCOMPARE(kvBlockTokens(f, m, table[0], false), iota(1, 4));
    QCOMPARE(kvBlockTokens(f, m, table[1], false), iota(5, 2));
    QVERIFY(kvBlockDescription(f, m, table[1], false).contains(QStringLiteral("w5 w6")));
  }

  void numbersEqualWhatTheFrameImplies() {
    KvManager kv({.num_blocks = 16, .block_size = 4});
    runPrompt(kv, 1, iota(1, 8));  // 2 full blocks
    kv.free(1);                    // both cached
    runPrompt(kv, 3, iota(1, 10));  // hits both (8 of 10 tokens), 1 new partial block
    runPrompt(kv, 4, iota(50, 5));  // 1 full + 1 partial (1 token)
    kv.fork(4, 5);                  // 2 blocks shared
    const KvStats st = kv.stats();
    const PoolFrame f = frameFrom(kv, {{3, "A", 0}, {4, "B", 1}, {5, "B fork", 1}});
    const KvPoolNumbers n = computeKvPoolNumbers(f);
    QCOMPARE(n.numUsed, st.num_used_blocks);
    QCOMPARE(n.numCached, st.num_cached_blocks);
    QCOMPARE(n.numFree, st.num_free_blocks);
    QCOMPARE(n.tokensStored, st.num_tokens_stored);
    QCOMPARE(n.tokensStored, int64_t(15));
    QCOMPARE(n.emptySlots, st.num_empty_slots);
    QCOMPARE(n.emptySlots, int64_t(2 + 3));  // block of seq 3 holds 2 of 4, seq 4's last 1 of 4
    QCOMPARE(n.fragmentation, st.fragmentation());
    QCOMPARE(n.fragmentation, 5.0 / (5 * 4));
    QCOMPARE(n.blocksSavedBySharing, st.num_shared_refs);
    QCOMPARE(n.blocksSavedBySharing, int64_t(2));
    QCOMPARE(n.prefixHitTokens, int64_t(8));
    QCOMPARE(n.prefixLookupTokens, int64_t(8 + 10 + 5));
    QCOMPARE(n.prefixHitRate, 8.0 / 23.0);
    QCOMPARE(n.contiguousReservedTokens, int64_t(3 * 64));
    // Slabs share nothing: the fork's slab holds its 5 tokens again, A's its 8 of the cache's.
    QCOMPARE(n.contiguousStoredTokens, int64_t(10 + 5 + 5));
    QCOMPARE(n.contiguousWaste, (192.0 - 20.0) / 192.0);
    QCOMPARE(n.pagedSlots, int64_t(20));
    QCOMPARE(kvPercent(n.fragmentation), QStringLiteral("25.0 %"));
  }

  void handFrameNumbers() {
    const KvPoolNumbers n = computeKvPoolNumbers(handFrame());
    QCOMPARE(n.numUsed, 3);
    QCOMPARE(n.numCached, 1);
    QCOMPARE(n.numFree, 4);
    QCOMPARE(n.tokensStored, int64_t(7));
    QCOMPARE(n.emptySlots, int64_t(5));
    QCOMPARE(n.fragmentation, 5.0 / 12.0);
    QCOMPARE(n.numSwappedBlocks, 1);
    QCOMPARE(n.prefixHitRate, 0.25);
    QCOMPARE(n.tokensPerSecond, 42.5);
    QCOMPARE(n.stepIndex, int64_t(7));
  }

  void eventsNameTheCellsToFlash() {
    KvManager kv({.num_blocks = 6, .block_size = 4, .num_host_blocks = 4});
    runPrompt(kv, 1, iota(1, 6));
    kv.fork(1, 2);
    kv.take_events();
    append(kv, 2, {7});  // copy-on-write of the shared partial block
    std::vector<KvFlashTarget> t = kvFlashTargets(kv.take_events());
    QCOMPARE(t.size(), size_t(2));
    QCOMPARE(t[0].kind, KvFlashKind::CopyOnWrite);
    QCOMPARE(t[0].block, kv.block_table(1)[1]);  // the shared block
    QCOMPARE(t[1].block, kv.block_table(2)[1]);  // its fresh copy
    QVERIFY(!t[0].host && !t[1].host);

    const std::vector<int32_t> table1(kv.block_table(1).begin(), kv.block_table(1).end());
    kv.preempt(1);  // frees its references: block 0 stays shared with seq 2
    t = kvFlashTargets(kv.take_events());
    QCOMPARE(t.size(), table1.size());
    for (size_t i = 0; i < t.size(); ++i) {
      QCOMPARE(t[i].kind, KvFlashKind::Preempt);
      QCOMPARE(t[i].block, table1[table1.size() - 1 - i]);  // released last block first
    }

    const std::vector<int32_t> table2(kv.block_table(2).begin(), kv.block_table(2).end());
    QVERIFY(kv.can_swap_out(2));
    kv.swap_out(2);
    t = kvFlashTargets(kv.take_events());
    QCOMPARE(t.size(), 2 * table2.size());  // device and host cell of each block
    QCOMPARE(t[0].kind, KvFlashKind::SwapOut);
    QCOMPARE(t[0].block, table2[0]);
    QVERIFY(t[1].host);
    QCOMPARE(t[1].block, kv.block_table(2)[0]);

    QVERIFY(kv.can_swap_in(2));
    kv.swap_in(2);
    t = kvFlashTargets(kv.take_events());
    QVERIFY(!t.empty());
    bool sawSwapIn = false, sawHit = false;
    for (const KvFlashTarget& x : t) {
      sawSwapIn |= x.kind == KvFlashKind::SwapIn;
      sawHit |= x.kind == KvFlashKind::CacheHit;
    }
    QVERIFY(sawSwapIn || sawHit);

    // Fill the pool so that a cached block is evicted.
    kv.free(2);
    kv.take_events();
    runPrompt(kv, 7, iota(100, 4 * 6));
    t = kvFlashTargets(kv.take_events());
    QVERIFY(std::any_of(t.begin(), t.end(), [](const KvFlashTarget& x) { return x.kind == KvFlashKind::Evict; }));

    // A prompt served from the cache.
    kv.free(7);
    kv.take_events();
    runPrompt(kv, 8, iota(100, 9));
    t = kvFlashTargets(kv.take_events());
    QCOMPARE(std::count_if(t.begin(), t.end(), [](const KvFlashTarget& x) { return x.kind == KvFlashKind::CacheHit; }), 2);
  }

  void flashesFadeAndEnd() {
    KvFlashes fl;
    std::vector<KvEvent> events{{KvEventKind::evict, -1, 3, -1, 0, BlockState::free},
                                {KvEventKind::swap_out, 1, 2, 0, 0, BlockState::free}};
    fl.add(events, 1000);
    QCOMPARE(fl.size(), size_t(3));  // block 3, block 2, host block 0
    QCOMPARE(fl.device().at(3).kind, KvFlashKind::Evict);
    QCOMPARE(fl.host().at(0).kind, KvFlashKind::SwapOut);
    QCOMPARE(KvFlashes::strength(fl.device().at(3), 1000), 1.0);
    QCOMPARE(KvFlashes::strength(fl.device().at(3), 1000 + KvFlashes::kFadeMs / 2), 0.5);
    fl.expire(1000 + KvFlashes::kFadeMs - 1);
    QCOMPARE(fl.size(), size_t(3));
    fl.add({{KvEventKind::evict, -1, 3, -1, 0, BlockState::free}}, 1400);  // restarts block 3
    fl.expire(1000 + KvFlashes::kFadeMs);
    QCOMPARE(fl.size(), size_t(1));
    QVERIFY(fl.device().count(3));
    fl.expire(1400 + KvFlashes::kFadeMs);
    QVERIFY(fl.empty());
  }

  void cellsResizeWithTheArea() {
    const KvGridLayout small = KvGridLayout::compute(QRect(0, 0, 100, 100), 100, 0);
    QCOMPARE(small.cellSize, 10);
    QCOMPARE(small.columns, 10);
    const KvGridLayout big = KvGridLayout::compute(QRect(0, 0, 200, 200), 100, 0);
    QCOMPARE(big.cellSize, 20);
    QCOMPARE(big.cellRect(11), QRect(20, 20, 19, 19));
    KvTier tier = KvTier::Host;
    QCOMPARE(big.cellAt(QPoint(25, 25), &tier), 11);
    QCOMPARE(tier, KvTier::Device);
    QCOMPARE(big.cellAt(QPoint(199, 199), &tier), 99);
    // With a host strip: it sits below the device rows, after its caption.
    const KvGridLayout withHost = KvGridLayout::compute(QRect(0, 0, 200, 200), 16, 4);
    QVERIFY(withHost.hostTop >= withHost.hostCaptionTop + KvGridLayout::kHostCaptionHeight);
    QVERIFY(withHost.hostCellRect(3).bottom() < 200);
    QCOMPARE(withHost.cellAt(withHost.hostCellRect(2).center(), &tier), 2);
    QCOMPARE(tier, KvTier::Host);
    QCOMPARE(withHost.cellAt(QPoint(5, withHost.hostCaptionTop + 2), &tier), -1);
    // The disk strip below both, after its own caption; every cell of the three fits and each
    // cell's centre is found again in its own tier.
    const KvGridLayout three = KvGridLayout::compute(QRect(0, 0, 200, 200), 16, 4, 30);
    QVERIFY(three.diskCaptionTop >= three.hostCellRect(3).bottom());
    QCOMPARE(three.diskTop, three.diskCaptionTop + KvGridLayout::kHostCaptionHeight);
    QCOMPARE(three.diskCellSize, three.cellSize / 2);  // the pool stays the larger
    QVERIFY(three.diskCellRect(29).bottom() < 200);
    for (auto [t, n] : {std::pair{KvTier::Device, 16}, std::pair{KvTier::Host, 4}, std::pair{KvTier::Disk, 30}})
      for (int i = 0; i < n; ++i) {
        KvTier at = KvTier::Device;
        QCOMPARE(three.cellAt(three.cellRect(t, i).center(), &at), i);
        QCOMPARE(at, t);
      }
    QCOMPARE(three.cellAt(QPoint(5, three.diskCaptionTop + 2), &tier), -1);
    // Without a host pool the disk strip takes the host strip's place.
    const KvGridLayout noHost = KvGridLayout::compute(QRect(0, 0, 200, 200), 16, 0, 5);
    QCOMPARE(noHost.diskCaptionTop, noHost.hostCaptionTop);
    QCOMPARE(noHost.cellAt(noHost.diskCellRect(4).center(), &tier), 4);
    QCOMPARE(tier, KvTier::Disk);
    // Block counts at both ends of the supported range fit.
    for (int n : {16, 100000}) {
      const KvGridLayout g = KvGridLayout::compute(QRect(0, 0, 640, 400), n, 0);
      QVERIFY(g.cellRect(n - 1).bottom() < 400);
    }
  }
};

QTEST_APPLESS_MAIN(TestKvCellModel)
#include "test_kv_cell_model.moc"
