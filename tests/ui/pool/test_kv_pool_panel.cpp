// The dockable block-pool panel: selecting a chat (legend or cell) shows its logical ->
// physical mapping; the numbers, the contiguous strip and the chart follow the frames; the
// panel docks into a main window; a snapshot PNG is written for a person to look at.

#include <QLocale>
#include <QtTest>

#include <QLabel>

#include <QDockWidget>
#include <QImage>
#include <QMainWindow>
#include <QTemporaryDir>

#include "engine/kv/kv_manager.h"
#include "ui/pool_panel/kv_block_table_view.h"
#include "ui/pool_panel/kv_chat_legend.h"
#include "ui/pool_panel/kv_contiguous_strip.h"
#include "ui/pool_panel/kv_pool_panel.h"
#include "ui/pool_view/kv_pool_view.h"
#include "ui/pool_panel/kv_stats_panel.h"
#include "support/kv_test_frames.h"
#include "ui/pool_panel/kv_time_chart.h"

using namespace pagedchat;
using namespace kvtest;

namespace {
// Two chats and a fork of the second, on a real manager: a system prompt shared through the
// prefix cache, a copy-on-write fork, a cached block.
struct Scenario {
  KvManager kv{{.num_blocks = 24, .block_size = 4}};
  std::vector<ChatSeq> chats{{1, "First chat", 0}, {2, "Second chat", 1}, {3, "Second (fork)", 2}};
  Scenario() {
    runPrompt(kv, 1, iota(1, 10));                   // "system prompt" 1..8 + 2 tokens
    std::vector<int32_t> second = iota(1, 8);        // the same system prompt ...
    for (int32_t t : iota(500, 5)) second.push_back(t);  // ... and its own question
    runPrompt(kv, 2, second);
    kv.fork(2, 3);
    append(kv, 3, {900});  // copy-on-write of the shared partial block
  }
  PoolFrame frame() { return frameFrom(kv, chats); }
};
}  // namespace

class TestKvPoolPanel : public QObject {
  Q_OBJECT
 private slots:
  void selectingAChatInTheLegendShowsItsMapping() {
    Scenario s;
    KvPoolPanel panel;
    panel.resize(900, 700);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    panel.setFrame(s.frame());
    QTRY_COMPARE(panel.chatLegend()->count(), 3);
    KvChatLegend* legend = panel.chatLegend();
    QSignalSpy selected(&panel, &KvPoolPanel::sequenceSelected);
    const QRect row = legend->visualItemRect(legend->item(legend->rowOf(3)));
    QTest::mouseClick(legend->viewport(), Qt::LeftButton, {}, row.center());
    QCOMPARE(selected.size(), 1);
    QCOMPARE(panel.selectedSequence(), SequenceId(3));
    QCOMPARE(panel.poolView()->selectedSequence(), SequenceId(3));
    KvBlockTableView* table = panel.blockTableView();
    std::vector<std::pair<int, int32_t>> want;
    for (size_t i = 0; i < s.kv.block_table(3).size(); ++i) want.emplace_back(int(i), s.kv.block_table(3)[i]);
    QCOMPARE(table->mapping(), want);
    QVERIFY2(table->headerText().contains(QStringLiteral("Second (fork) (seq 3)")), qPrintable(table->headerText()));
    QVERIFY2(table->headerText().contains(QStringLiteral("14 tokens in 4 blocks")), qPrintable(table->headerText()));
    QVERIFY(!table->onHost());
    // The table is drawn: its area is not blank.
    const QImage img = table->grab().toImage();
    QVERIFY(img.height() >= table->heightForWidth(table->width()) - 1);

    // The selection survives the next frames, and follows the chat's table as it grows.
    append(s.kv, 3, {901, 902, 903});
    panel.setFrame(s.frame());
    QTRY_COMPARE(table->mapping().size(), size_t(5));
    QCOMPARE(legend->currentRow(), legend->rowOf(3));
  }

  // Parallel samples are one chat's several sequences: the legend numbers them, each line its own.
  void aChatsSamplesAreNumberedInTheLegend() {
    KvManager kv{{.num_blocks = 16, .block_size = 4}};
    runPrompt(kv, 1, iota(1, 6));
    kv.fork(1, 2);
    kv.fork(1, 3);
    KvChatLegend legend;
    legend.setFrame(frameFrom(kv, {{1, "Chat A", 0}, {2, "Chat A", 0}, {3, "Chat A", 0}}), KvCellColors::fromPalette(legend.palette()));
    QCOMPARE(legend.count(), 3);
    QCOMPARE(legend.item(0)->text(), QStringLiteral("1 · Chat A - 2 blocks"));
    QCOMPARE(legend.item(1)->text(), QStringLiteral("2 · Chat A - 2 blocks"));
    QCOMPARE(legend.item(2)->text(), QStringLiteral("3 · Chat A - 2 blocks"));
    legend.setFrame(frameFrom(kv, {{1, "Chat A", 0}, {2, "Chat B", 1}}), KvCellColors::fromPalette(legend.palette()));
    QCOMPARE(legend.item(0)->text(), QStringLiteral("Chat A - 2 blocks"));
    // A narrow dock: the title is cut in its middle, never scrolled sideways; the whole line on hover.
    QCOMPARE(legend.item(0)->toolTip(), legend.item(0)->text());
    QCOMPARE(legend.horizontalScrollBarPolicy(), Qt::ScrollBarAlwaysOff);
    QCOMPARE(legend.textElideMode(), Qt::ElideMiddle);
  }

  void clickingACellSelectsItsChatInThePanel() {
    Scenario s;
    KvPoolPanel panel;
    panel.resize(900, 700);
    panel.setFrame(s.frame());
    panel.flush();
    KvPoolView* view = panel.poolView();
    const int32_t own = s.kv.block_table(1).back();  // the first chat's own partial block
    QTest::mouseClick(view, Qt::LeftButton, {}, view->gridLayout().cellRect(own).center());
    QCOMPARE(panel.selectedSequence(), SequenceId(1));
    QCOMPARE(panel.blockTableView()->sequence(), SequenceId(1));
    QCOMPARE(panel.chatLegend()->currentRow(), panel.chatLegend()->rowOf(1));
    QCOMPARE(panel.blockTableView()->mapping().size(), s.kv.block_table(1).size());
  }

  // The state key never shows a state in a chat's colour but "in use" (a chat coloured like the
  // swapped swatch read as swapped out), and free is an outline, visible on the window.
  void theStateKeyUsesNoChatColourForAState() {
    KvPoolPanel panel;
    auto* key = panel.findChild<QLabel*>(QStringLiteral("kvStateKey"));
    const KvCellColors colors = KvCellColors::fromPalette(panel.palette());
    for (int i = 1; i < KvCellColors::kNumChatColors; ++i) QVERIFY2(!key->text().contains(colors.chat(i).name()), qPrintable(key->text()));
    QVERIFY(key->text().contains(QStringLiteral("&#9633;</span>&nbsp;free")));
    QVERIFY(key->text().contains(QStringLiteral("&#9640;</span>&nbsp;swapped out")));
  }

  void theNumbersFollowTheFrame() {
    Scenario s;
    const KvStats st = s.kv.stats();
    KvPoolPanel panel;
    PoolFrame f = s.frame();
    f.tokensPerSecond = 123.4;
    f.stepIndex = 42;
    f.lastStepSummary = QStringLiteral("step 42: 3 sequences, 3 tokens, 1 block copied");
    f.stats.kv.bytes_per_block = 16384;  // the backend's: it follows the KV element type
    panel.setFrame(f);
    QCOMPARE(panel.statsPanel()->numbers().stepIndex, int64_t(0));  // coalesced: not yet applied
    QTRY_COMPARE(panel.statsPanel()->numbers().stepIndex, int64_t(42));
    KvStatsPanel* stats = panel.statsPanel();
    QCOMPARE(stats->numbers().fragmentation, st.fragmentation());
    QCOMPARE(stats->numbers().prefixHitRate, st.prefix_hit_rate());
    QCOMPARE(stats->numbers().prefixHitTokens, int64_t(8));  // the second chat's system prompt
    QVERIFY2(stats->rowText("fragmentation").startsWith(kvPercent(st.fragmentation())), qPrintable(stats->rowText("fragmentation")));
    QVERIFY2(stats->rowText("hitRate").startsWith(kvPercent(8.0 / 23.0)), qPrintable(stats->rowText("hitRate")));
    QVERIFY2(stats->rowText("used").startsWith(QStringLiteral("%1 / 24").arg(st.num_used_blocks)), qPrintable(stats->rowText("used")));
    QVERIFY2(stats->rowText("tokens").startsWith(QString::number(st.num_tokens_stored)), qPrintable(stats->rowText("tokens")));
    QVERIFY2(stats->rowText("sharing").startsWith(QStringLiteral("%1 blocks").arg(st.num_shared_refs)), qPrintable(stats->rowText("sharing")));
    QCOMPARE(stats->rowText("memory"), QStringLiteral("%1 of %2 (%3 a token)")
                                           .arg(kvBytes(16384ull * st.num_used_blocks), kvBytes(16384ull * 24),
                                                kvBytes(16384ull / st.block_size)));
    QCOMPARE(stats->rowText("tokPerSec"), QStringLiteral("123.4 tok/s"));
    QCOMPARE(stats->rowText("step"), QStringLiteral("42"));
    QCOMPARE(stats->rowText("summary"), f.lastStepSummary);
    // Every figure says what it counts (a tooltip on its value and on its name).
    for (QLabel* value : stats->findChildren<QLabel*>()) {
      if (!value->objectName().startsWith(QLatin1String("kvStat_")) || value->objectName() == QLatin1String("kvStat_summary")) continue;
      QVERIFY2(value->toolTip().size() > 20, qPrintable(value->objectName()));
    }
    // The contiguous strip: 3 slabs of 64 against each chat's own tokens (slabs share nothing: the
    // system prompt is stored in both chats' slabs, the fork's prefix in its own).
    int64_t ownTokens = 0;
    for (const PoolFrameSequence& seq : f.sequences) ownTokens += static_cast<int64_t>(seq.tokens.size());
    QCOMPARE(ownTokens, int64_t(10 + 13 + 14));
    const QString contiguous = panel.contiguousStrip()->contiguousText();
    QVERIFY2(contiguous.contains(QStringLiteral("3 slabs of 64 = 192 tokens reserved, 37 stored")), qPrintable(contiguous));
    QVERIFY2(contiguous.contains(kvPercent((192.0 - ownTokens) / 192.0)), qPrintable(contiguous));
    // The pool of 24 blocks of 4 holds one slab of 64: the two other chats could not start.
    QVERIFY2(contiguous.contains(QStringLiteral("the pool holds 1 slab: 2 of these chats could not start")), qPrintable(contiguous));
    const KvLayoutComparison& layout = panel.contiguousStrip()->layout();
    QCOMPARE(layout.capacity, int64_t(96));
    QCOMPARE(layout.numWaiting, 2);
    QCOMPARE(layout.contiguousUsed, ownTokens);
    // Paged: each block once, with its first owner; together exactly the in-use blocks.
    QCOMPARE(layout.pagedReserved, int64_t(st.num_used_blocks) * 4);
    QCOMPARE(layout.pagedUsed, st.num_tokens_stored);
    QVERIFY2(panel.contiguousStrip()->pagedText().contains(kvPercent(st.fragmentation())), qPrintable(panel.contiguousStrip()->pagedText()));
    // The chart took a sample of the frame.
    QCOMPARE(panel.timeChart()->samples().size(), size_t(1));
    QCOMPARE(panel.timeChart()->samples().back().used, st.num_used_blocks);
    QCOMPARE(panel.timeChart()->samples().back().free, st.num_free_blocks);
  }

  // The disk tier's row: shown only with one, its files, bytes and what went each way.
  void theDiskRowShowsOnlyWithADiskTier() {
    Scenario s;
    KvPoolPanel panel;
    PoolFrame f = s.frame();
    f.stepIndex = 1;
    panel.setFrame(f);
    QTRY_COMPARE(panel.statsPanel()->numbers().stepIndex, int64_t(1));
    QVERIFY(!panel.statsPanel()->numbers().diskTier);
    f.stepIndex = 2;
    f.stats.disk_tier = true;
    f.stats.disk.num_files = 1234;
    f.stats.disk.bytes = 3ull << 20;
    f.stats.disk.max_bytes = 1ull << 30;
    f.stats.kv.num_disk_reads = 7;
    f.stats.kv.num_disk_writes = 40;
    f.stats.kv.disk_hit_tokens = 28;
    panel.setFrame(f);
    QTRY_COMPARE(panel.statsPanel()->numbers().stepIndex, int64_t(2));
    QVERIFY2(panel.statsPanel()->rowText("hitRate").endsWith(QStringLiteral("; 28 more read from disk")), qPrintable(panel.statsPanel()->rowText("hitRate")));
    QCOMPARE(panel.statsPanel()->rowText("disk"), QStringLiteral("%1 blocks, %2 of %3; 7 read, 40 written")
                                                      .arg(QLocale().toString(1234), kvBytes(3ull << 20), kvBytes(1ull << 30)));
    f.stepIndex = 3;
    f.stats.disk.writing = false;
    panel.setFrame(f);
    QTRY_COMPARE(panel.statsPanel()->numbers().stepIndex, int64_t(3));
    QVERIFY(panel.statsPanel()->rowText("disk").endsWith(QStringLiteral("(writing stopped: the disk is full)")));
  }

  void framesFasterThanTheDisplayAreCoalescedButTheirEventsFlash() {
    Scenario s;
    KvPoolPanel panel;
    panel.setFrame(s.frame());  // holds the fork's copy-on-write
    for (int i = 0; i < 5; ++i) {
      append(s.kv, 1, {1000 + i});
      panel.setFrame(s.frame());
    }
    QVERIFY(panel.poolView()->isAnimating());
    QVERIFY(panel.poolView()->flashes().device().count(s.kv.block_table(3).back()));
    QTRY_VERIFY(panel.timeChart()->samples().size() == 1);  // one refresh for six frames
    QCOMPARE(panel.statsPanel()->numbers().tokensStored, s.kv.stats().num_tokens_stored);
  }

  void theChartKeepsAMinute() {
    KvTimeChart chart;
    for (qint64 ms = 0; ms <= 90'000; ms += 16) chart.addSample(ms, int(ms / 1000), 1, 200 - int(ms / 1000));
    QVERIFY(chart.samples().front().ms >= 90'000 - KvTimeChart::kWindowMs);
    QVERIFY(chart.samples().size() <= 2 * KvTimeChart::kWindowMs / KvTimeChart::kBucketMs + 2);
    QCOMPARE(chart.samples().back().ms, qint64(90'000 - 90'000 % 16));
    QCOMPARE(chart.samples().back().used, 90);
  }

  void aPoolOfAnotherSizeStartsTheChartAfresh() {
    // The teaching preset reloads the model with 128 blocks where there were 4000: the minute
    // before is of another pool, and drawn against 128 it read as a full pool.
    KvTimeChart chart;
    for (qint64 ms = 0; ms <= 5'000; ms += 250) chart.addSample(ms, 3000, 500, 500);
    QVERIFY(chart.samples().size() > 10);
    chart.addSample(5'100, 0, 0, 128);
    QCOMPARE(chart.samples().size(), size_t(1));
    QCOMPARE(chart.samples().front().free, 128);
    chart.addSample(5'400, 8, 0, 120);  // the same pool: kept
    QCOMPARE(chart.samples().size(), size_t(2));
  }

  void itDocksIntoAMainWindow() {
    QMainWindow window;
    QDockWidget* dock = KvPoolPanel::createDock(&window);
    QCOMPARE(dock->objectName(), QStringLiteral("kvPoolDock"));
    QCOMPARE(window.dockWidgetArea(dock), Qt::RightDockWidgetArea);
    auto* panel = qobject_cast<KvPoolPanel*>(dock->widget());
    QVERIFY(panel);
    QCOMPARE(window.findChild<KvPoolPanel*>(QStringLiteral("kvPoolPanel")), panel);
    // Queued delivery, as the bridge sends it from the engine thread.
    Scenario s;
    QMetaObject::invokeMethod(panel, "setFrame", Qt::QueuedConnection, Q_ARG(PoolFrame, s.frame()));
    QTRY_COMPARE(panel->chatLegend()->count(), 3);
  }

  void aSnapshotPngIsWritten_data() {
    QTest::addColumn<int>("numBlocks");
    QTest::addColumn<int>("blockSize");
    QTest::newRow("teaching: 24 blocks of 4") << 24 << 4;
    QTest::newRow("4096 blocks of 16") << 4096 << 16;
  }
  void aSnapshotPngIsWritten() {
    QFETCH(int, numBlocks);
    QFETCH(int, blockSize);
    KvManager kv({.num_blocks = numBlocks, .block_size = blockSize, .num_host_blocks = 8});
    const int n = numBlocks * blockSize / 8;
    runPrompt(kv, 1, iota(1, n));
    runPrompt(kv, 2, iota(1, n + 3));
    kv.fork(2, 3);
    append(kv, 3, {7});
    runPrompt(kv, 4, iota(5000, 2 * blockSize + 1));
    QVERIFY(kv.can_swap_out(4));
    kv.swap_out(4);
    runPrompt(kv, 9, iota(9000, n / 2));
    kv.free(9);
    PoolFrame f = frameFrom(kv, {{1, "Chat A", 0}, {2, "Chat B", 1}, {3, "Chat B (fork)", 2}, {4, "Swapped chat", 3}},
                            int64_t(numBlocks) * blockSize / 2);  // max context: half the pool
    f.tokensPerSecond = 57.0;
    f.stepIndex = 1234;
    f.lastStepSummary = QStringLiteral("step 1234: 3 sequences ran, 3 decode tokens; block copied on write");
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("kv_pool_%1x%2.png").arg(numBlocks).arg(blockSize));
    QVERIFY(KvPoolPanel::saveSnapshotPng(f, path, QSize(1000, 720)));
    QImage img(path);
    QCOMPARE(img.size(), QSize(1000, 720));
    // Keep a copy for a person to look at when asked to.
    if (const QByteArray out = qgetenv("PAGEDCHAT_KV_SNAPSHOT_DIR"); !out.isEmpty())
      QVERIFY(QFile::copy(path, QDir(QString::fromLocal8Bit(out)).filePath(QFileInfo(path).fileName())));
  }
};

QTEST_MAIN(TestKvPoolPanel)
#include "test_kv_pool_panel.moc"
