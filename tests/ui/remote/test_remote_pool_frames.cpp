// A remote server's pool frames as the app reads them (RemotePoolWatcher::frameFromJson): a real
// frame read back whole; a hostile or broken one (mutated at random: blocks out of range, wrong
// types, truncated, garbage) either refused with a reason or, when read, drawn by the pool panel
// without a crash. The frames come from a real server's JSON writer (server/api/pool_watch.h).

#include <QtTest>

#include <random>

#include "engine/kv/kv_manager.h"
#include "server/api/pool_watch.h"
#include "appcore/pool/kv_pool_numbers.h"
#include "ui/pool_panel/kv_pool_panel.h"
#include "support/kv_test_frames.h"
#include "appcore/remote/remote_pool_watcher.h"

using namespace pagedchat;

namespace {
// A pool with sharing, a copy-on-write, cached and free blocks, written as the server writes it.
QByteArray realFrame() {
  KvManager kv({.num_blocks = 12, .block_size = 4});
  kvtest::runPrompt(kv, 1, kvtest::iota(100, 10));
  kv.fork(1, 2);
  kvtest::append(kv, 2, {7});  // copy-on-write of the shared partial block
  PoolWatchFrame f;
  f.step = 5;
  f.events = kv.take_events();
  f.snapshot = kv.snapshot();
  for (SequenceId s : {SequenceId{1}, SequenceId{2}}) {
    const std::span<const int32_t> table = kv.block_table(s);
    f.sequences.push_back({s, s == 1 ? 3 : -1, 10, {table.begin(), table.end()}, {}});
  }
  return poolWatchJson(f);
}
}  // namespace

class TestRemotePoolFrames : public QObject {
  Q_OBJECT
 private slots:
  void aRealFrameIsReadWhole() {
    PoolFrame f;
    QString why;
    QVERIFY2(RemotePoolWatcher::frameFromJson(realFrame(), &f, &why), qPrintable(why));
    QCOMPARE(f.stepIndex, 5);
    QCOMPARE(f.snapshot.block_size, 4);
    QCOMPARE(f.snapshot.blocks.size(), size_t(12));
    QCOMPARE(f.sequences.size(), size_t(2));
    QCOMPARE(f.sequences[0].chatTitle, QStringLiteral("request 3"));
    QVERIFY(!f.events.empty());
    int shared = 0;
    for (const KvBlockInfo& b : f.snapshot.blocks) shared += b.ref_count > 1;
    QCOMPARE(computeKvPoolNumbers(f).numSharedBlocks, shared);
    QVERIFY(shared >= 2);
  }

  void brokenFramesAreRefusedOrDrawn() {
    KvPoolPanel panel;
    panel.resize(600, 700);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    const QByteArray base = realFrame();
    std::mt19937 rng(9);
    const char* tokens[] = {"-1", "99999", "1e9", "\"x\"", "null", "[]", "{}", "\"in_use\"", "\"swap_out\"", "4097", "-5", "0"};
    int read = 0, refused = 0;
    for (int trial = 0; trial < 400; ++trial) {
      QByteArray j = base;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits; ++e) {
        const int at = static_cast<int>(rng() % j.size());
        switch (rng() % 4) {
          case 0: {  // a number or value replaced
            int end = at;
            while (end < j.size() && QByteArray(",]}").indexOf(j[end]) < 0) ++end;
            j.replace(at, end - at, tokens[rng() % std::size(tokens)]);
            break;
          }
          case 1: j.truncate(at); break;
          case 2: j.insert(at, tokens[rng() % std::size(tokens)]); break;
          default: j[at] = static_cast<char>(rng() % 128); break;
        }
      }
      PoolFrame f;
      if (!RemotePoolWatcher::frameFromJson(j, &f)) {
        ++refused;
        continue;
      }
      ++read;
      panel.setFrame(f);
      panel.flush();
      panel.grab();  // drawn: the view, the numbers, the legend, the event log
    }
    QVERIFY2(read > 0 && refused > 0, qPrintable(QStringLiteral("%1 read, %2 refused").arg(read).arg(refused)));
  }
};

QTEST_MAIN(TestRemotePoolFrames)
#include "test_remote_pool_frames.moc"
