// A vLLM server's KV cache in the pool view, as a user watches it: View > Watch a remote pool >
// vLLM KV events… asks for the address, and the events a publisher sends (played here on
// loopback in vLLM's wire format, tests/support/vllm_fake_publisher.h) are drawn: each stored
// block a cached cell in its own slot, coloured by its prompt's chain, a removed one's slot free
// again, offloaded blocks in the host strip, AllBlocksCleared emptying the view; back to this
// machine's pool, the view is ours again.

#include <QtTest>

#include <QApplication>
#include <QDockWidget>
#include <QInputDialog>
#include <QLabel>
#include <QMenu>

#include "support/test_env.h"
#include "support/vllm_fake_publisher.h"
#include "support/window_driver.h"
#include "ui/pool_panel/kv_chat_legend.h"
#include "appcore/pool/kv_event_text.h"
#include "appcore/pool/kv_pool_numbers.h"
#include "appcore/remote/vllm_pool_watcher.h"
#include "appcore/session/app_services.h"
#include "appcore/session/pool_control.h"
#include "ui/shell/main_window.h"

using namespace pagedchat::test::vllm;

namespace {
// BlockStored as vLLM's current (map) layout writes it: sha256-like bytes hashes, 4 tokens a block.
void packStored(Pack& p, std::initializer_list<const char*> hashes, const char* parent, const char* medium) {
  p.map(7).str("type").str("BlockStored").str("block_hashes").array(static_cast<uint32_t>(hashes.size()));
  for (const char* h : hashes) p.bin(h);
  p.str("parent_block_hash");
  if (parent) p.bin(parent);
  else p.nil();
  p.str("token_ids").array(static_cast<uint32_t>(hashes.size() * 4));
  for (size_t t = 0; t < hashes.size() * 4; ++t) p.i(static_cast<int64_t>(1000 + t));
  p.str("block_size").i(4).str("lora_id").nil().str("medium").str(medium);
}
void packRemoved(Pack& p, std::initializer_list<const char*> hashes, const char* medium) {
  p.map(3).str("type").str("BlockRemoved").str("block_hashes").array(static_cast<uint32_t>(hashes.size()));
  for (const char* h : hashes) p.bin(h);
  p.str("medium").str(medium);
}
// Opens a batch of `events` events (the caller packs them, then finish() adds the rank).
void openBatch(Pack& p, double ts, uint32_t events) { p.map(3).str("ts").f(ts).str("events").array(events); }
std::string finish(Pack& p) { return p.str("data_parallel_rank").i(0).bytes(); }

int cachedCells(const std::vector<pagedchat::KvBlockInfo>& blocks) {
  int n = 0;
  for (const pagedchat::KvBlockInfo& b : blocks) n += b.state == pagedchat::BlockState::cached;
  return n;
}
}  // namespace

class TestVllmPoolView : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { pagedchat::test::useFreshDataFolder(); }

  void aVllmCacheIsDrawnFromItsEvents() {
    AppServices services;
    MainWindow w(services);
    w.show();
    FakePublisher pub;
    const QString endpoint = QString::fromStdString(pub.endpoint());
    // The menu item asks for the address in a dialog, as a user gives it.
    auto* menu = w.findChild<QMenu*>(QStringLiteral("watchPoolMenu"));
    QVERIFY(menu);
    emit menu->aboutToShow();
    QAction* item = w.findChild<QAction*>(QStringLiteral("watchVllmPool"));
    QVERIFY(item);
    QTimer::singleShot(0, this, [&] {
      auto* dialog = qobject_cast<QInputDialog*>(QApplication::activeModalWidget());
      QVERIFY(dialog);
      dialog->setTextValue(endpoint);
      dialog->accept();
    });
    item->trigger();
    QCOMPARE(w.session().pool().watchedVllmPool(), endpoint);
    QVERIFY(w.session().pool().watchedPool().isEmpty());
    auto* dock = w.findChild<QDockWidget*>(QStringLiteral("kvBlocksDock"));
    QVERIFY2(dock->windowTitle().contains(QStringLiteral("vLLM")), qPrintable(dock->windowTitle()));
    auto* watcher = w.session().findChild<VllmPoolWatcher*>();
    QVERIFY(watcher);
    PoolFrame last;
    connect(watcher, &VllmPoolWatcher::frame, this, [&](const PoolFrame& f) { last = f; });
    QVERIFY(pub.awaitSubscriber());

    // A prompt of three blocks and its next turn's block (parent: the third), another prompt of two.
    Pack first;
    openBatch(first, 1.0, 3);
    packStored(first, {"hash-a", "hash-b", "hash-c"}, nullptr, "GPU");
    packStored(first, {"hash-d"}, "hash-c", "GPU");
    packStored(first, {"hash-x", "hash-y"}, nullptr, "GPU");
    pub.send({"", bigEndian(0), finish(first)});
    QTRY_COMPARE_WITH_TIMEOUT(last.stepIndex, int64_t{1}, 10000);
    QCOMPARE(cachedCells(last.snapshot.blocks), 6);
    QCOMPARE(last.snapshot.block_size, 4);
    QCOMPARE(last.sequences.size(), size_t{2});
    QCOMPARE(last.sequences[0].chatTitle, QStringLiteral("prefix 1"));
    QCOMPARE(last.sequences[0].blockTable, (std::vector<int32_t>{0, 1, 2, 3}));
    QCOMPARE(last.sequences[1].blockTable, (std::vector<int32_t>{4, 5}));
    QCOMPARE(last.snapshot.blocks[3].owners, std::vector<pagedchat::SequenceId>{1});
    QCOMPARE(last.events.size(), size_t{6});
    QCOMPARE(last.events[0].kind, pagedchat::KvEventKind::allocate);
    const auto told = narrateKvEvents(last.events, [&](pagedchat::SequenceId s) { return QStringLiteral("prefix %1").arg(s); }, last.fromVllmEvents);
    QVERIFY(!told.empty());
    QCOMPARE(told[0].text, QStringLiteral("prefix 1: blocks #0, #1, #2, #3 stored in vLLM's prefix cache (full blocks, by their hash)."));

    // One block evicted from the GPU, another offloaded to CPU memory.
    Pack second;
    openBatch(second, 2.0, 2);
    packRemoved(second, {"hash-b"}, "GPU");
    packStored(second, {"hash-c"}, "hash-b", "CPU");
    pub.send({"", bigEndian(1), finish(second)});
    QTRY_COMPARE_WITH_TIMEOUT(last.stepIndex, int64_t{2}, 10000);
    QCOMPARE(cachedCells(last.snapshot.blocks), 5);
    QCOMPARE(last.snapshot.blocks[1].state, pagedchat::BlockState::free);
    QCOMPARE(cachedCells(last.snapshot.host_blocks), 1);
    QCOMPARE(last.snapshot.host_blocks[0].owners, std::vector<pagedchat::SequenceId>{1});  // prefix 1's block
    QCOMPARE(last.events.size(), size_t{1});  // the eviction (the host strip is drawn, not flashed)
    QCOMPARE(last.events[0].kind, pagedchat::KvEventKind::evict);
    QCOMPARE(last.events[0].block, 1);
    QCOMPARE(computeKvPoolNumbers(last).numCached, 5);  // what the panel's numbers say

    // vLLM's reset_prefix_cache: nothing held.
    Pack third;
    openBatch(third, 3.0, 1);
    third.map(1).str("type").str("AllBlocksCleared");
    pub.send({"", bigEndian(2), finish(third)});
    QTRY_COMPARE_WITH_TIMEOUT(last.stepIndex, int64_t{3}, 10000);
    QCOMPARE(cachedCells(last.snapshot.blocks) + cachedCells(last.snapshot.host_blocks), 0);
    QVERIFY(last.sequences.empty());

    // The View menu marks the one pool shown.
    emit menu->aboutToShow();
    QStringList checked;
    for (QAction* a : menu->actions())
      if (a->isChecked()) checked << a->objectName();
    QCOMPARE(checked, QStringList{QStringLiteral("watchVllmPool")});

    // A payload that is not a batch is skipped and said; the view goes on.
    pub.send({"", bigEndian(3), "\xc1"});
    QTRY_VERIFY_WITH_TIMEOUT(w.findChild<QLabel*>(QStringLiteral("status"))->text().contains(QStringLiteral("skipped")), 10000);
    QCOMPARE(w.session().pool().watchedVllmPool(), endpoint);

    // Back to this machine's pool (no model here): nothing of vLLM's stays drawn.
    Pack again;
    openBatch(again, 4.0, 2);
    packStored(again, {"hash-a", "hash-b"}, nullptr, "GPU");
    packStored(again, {"hash-x"}, nullptr, "GPU");
    pub.send({"", bigEndian(4), finish(again)});
    QTRY_COMPARE_WITH_TIMEOUT(last.stepIndex, int64_t{4}, 10000);
    QTRY_COMPARE_WITH_TIMEOUT(w.findChild<KvChatLegend*>()->count(), 2, 10000);  // its two prefixes in the legend
    w.session().pool().watchPool(QString());
    QVERIFY(w.session().pool().watchedVllmPool().isEmpty());
    QCOMPARE(dock->windowTitle(), QStringLiteral("KV blocks"));
    QTRY_COMPARE_WITH_TIMEOUT(w.findChild<KvChatLegend*>()->count(), 0, 5000);  // drawn at the next turn of the event loop
  }

  // An address ZeroMQ cannot use is said, and this machine's pool comes back.
  void aBadAddressIsSaid() {
    AppServices services;
    MainWindow w(services);
    w.show();
    w.session().pool().watchVllmPool(QStringLiteral("not-an-endpoint"));
    QTRY_VERIFY_WITH_TIMEOUT(w.session().pool().watchedVllmPool().isEmpty(), 10000);
    const QString status = w.findChild<QLabel*>(QStringLiteral("status"))->text();
    QVERIFY2(status.contains(QStringLiteral("no longer shown")), qPrintable(status));
    QCOMPARE(w.findChild<QDockWidget*>(QStringLiteral("kvBlocksDock"))->windowTitle(), QStringLiteral("KV blocks"));
  }
};

QTEST_MAIN(TestVllmPoolView)
#include "test_vllm_pool_view.moc"
