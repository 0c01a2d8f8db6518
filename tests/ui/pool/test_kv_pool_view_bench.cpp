// How long a full repaint of the block-pool grid takes with 10,000 blocks (the issue asks for
// under 8 ms): a QBENCHMARK, not a timed assert. Two cases: painting a frame already taken
// (the kept cell image copied), and taking a new frame then painting (the model and the cell
// image built again), at a dock-sized, a large and a 2560x1440 widget (the last two draw the
// ref counts as text).

#include <QtTest>

#include <QImage>
#include <QPainter>

#include <random>

#include "ui/pool_view/kv_pool_view.h"
#include "support/kv_test_frames.h"

using namespace pagedchat;
using namespace kvtest;

namespace {
// 10,000 blocks of 16: 40 chats holding 6,000 blocks (one in ten shared by 2-4 forks, a
// partial last block each), 2,500 cached, the rest free; 200 host blocks, half swapped; a
// frame's worth of events (copy-on-write, evictions, cache hits).
PoolFrame bigFrame() {
  constexpr int kBlocks = 10'000, kChats = 40, kPerChat = 150, kCached = 2'500, kHost = 200;
  std::mt19937 rng(7);
  PoolFrame f;
  f.snapshot.block_size = 16;
  f.snapshot.blocks.resize(kBlocks);
  std::vector<int32_t> order(kBlocks);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  size_t next = 0;
  for (int c = 0; c < kChats; ++c) {
    PoolFrameSequence s;
    s.id = c + 1;
    s.chatTitle = QStringLiteral("Chat %1").arg(c + 1);
    s.colorIndex = c;
    for (int i = 0; i < kPerChat; ++i) {
      const int32_t b = order[next++];
      KvBlockInfo& info = f.snapshot.blocks[b];
      info.state = BlockState::in_use;
      info.ref_count = rng() % 10 == 0 ? 2 + static_cast<int>(rng() % 3) : 1;
      info.num_filled = i + 1 == kPerChat ? 7 : 16;
      info.has_hash = info.in_prefix_cache = info.num_filled == 16;
      info.owners = {s.id};
      s.blockTable.push_back(b);
    }
    s.tokens = iota(c * 10'000, (kPerChat - 1) * 16 + 7);
    f.sequences.push_back(std::move(s));
  }
  for (int i = 0; i < kCached; ++i) {
    KvBlockInfo& info = f.snapshot.blocks[order[next++]];
    info.state = BlockState::cached;
    info.num_filled = 16;
    info.has_hash = info.in_prefix_cache = true;
  }
  f.snapshot.host_blocks.resize(kHost);
  for (int h = 0; h < kHost / 2; ++h) f.snapshot.host_blocks[h] = block(BlockState::swapped, 1, 16, {});
  for (int e = 0; e < 30; ++e)
    f.events.push_back({e % 3 == 0 ? KvEventKind::copy_on_write : e % 3 == 1 ? KvEventKind::evict : KvEventKind::cache_hit, 1,
                        order[e], order[e + 100], 1, BlockState::in_use});
  f.detokenize = wordDetokenizer();
  return f;
}
}  // namespace

class TestKvPoolViewBench : public QObject {
  Q_OBJECT
 private slots:
  void fullRepaintOf10000Blocks_data() {
    QTest::addColumn<QSize>("size");
    QTest::addColumn<bool>("newFrame");
    QTest::newRow("dock 700x500, paint") << QSize(700, 500) << false;
    QTest::newRow("dock 700x500, new frame + paint") << QSize(700, 500) << true;
    QTest::newRow("large 1600x1000, paint") << QSize(1600, 1000) << false;
    QTest::newRow("large 1600x1000, new frame + paint") << QSize(1600, 1000) << true;
    QTest::newRow("huge 2560x1440, paint") << QSize(2560, 1440) << false;
    QTest::newRow("huge 2560x1440, new frame + paint") << QSize(2560, 1440) << true;
  }
  void fullRepaintOf10000Blocks() {
    QFETCH(QSize, size);
    QFETCH(bool, newFrame);
    const auto frame = std::make_shared<const PoolFrame>(bigFrame());
    KvPoolView view;
    view.resize(size);
    view.setFrame(frame);  // flashes live: they are painted too
    QImage target(size, QImage::Format_ARGB32_Premultiplied);
    view.render(&target);  // builds the cell model
    QVERIFY(view.cellModel().cells.size() == 10'000);
    QVERIFY(!view.flashes().empty());
    QVERIFY(view.gridLayout().cellSize >= (size.width() > 1000 ? 12 : 5));  // large: counts drawn
    QBENCHMARK {
      if (newFrame) view.setFrame(frame);
      view.render(&target);
    }
  }
};

QTEST_MAIN(TestKvPoolViewBench)
#include "test_kv_pool_view_bench.moc"
