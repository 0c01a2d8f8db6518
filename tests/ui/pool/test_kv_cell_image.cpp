// The block-pool view's scanline cell filler against the QPainter reference: the same pixels,
// image for image, for cells with and without gaps and outlines, a host strip, at device pixel
// ratios 1 and 2, in a light and a dark palette.

#include <QtTest>

#include <QImage>
#include <QPainter>

#include "ui/pool_view/kv_cell_image.h"
#include "support/kv_test_frames.h"

using namespace pagedchat;
using namespace kvtest;

namespace {
// n blocks cycling through every cell kind and 12 owners (two beyond the chat colours, one
// unknown to the frame), with a host pool of nHost blocks, half swapped.
PoolFrame mixedFrame(int n, int nHost) {
  PoolFrame f;
  f.snapshot.block_size = 4;
  for (int s = 0; s < 12; ++s) f.sequences.push_back({s + 1, QStringLiteral("Chat %1").arg(s + 1), s, {}, {}});
  for (int b = 0; b < n; ++b) {
    const SequenceId owner = b % 13 + 1;  // 13: not in the frame
    switch (b % 5) {
      case 0: f.snapshot.blocks.push_back(block(BlockState::free, 0, 0, {})); break;
      case 1: f.snapshot.blocks.push_back(block(BlockState::in_use, 1, 4, {owner})); break;
      case 2: f.snapshot.blocks.push_back(block(BlockState::in_use, 2 + b % 3, 4, {owner, owner + 1})); break;
      // Cached: ours (no owner), or a vLLM prefix's (an owner: the tinted grey).
      case 3: f.snapshot.blocks.push_back(block(BlockState::cached, 0, 4, b % 2 ? std::vector<SequenceId>{owner} : std::vector<SequenceId>{}, true)); break;
      default: f.snapshot.blocks.push_back(block(BlockState::in_use, 1, 2, {owner})); break;
    }
  }
  for (int h = 0; h < nHost; ++h)
    f.snapshot.host_blocks.push_back(h % 2 ? block(BlockState::swapped, 1, 4, {h % 13 + 1}) : block(BlockState::free, 0, 0, {}));
  return f;
}

QPalette darkPalette() {
  QPalette p;
  p.setColor(QPalette::Window, QColor(30, 30, 30));
  p.setColor(QPalette::Base, QColor(20, 20, 20));
  p.setColor(QPalette::Text, QColor(230, 230, 230));
  return p;
}
}  // namespace

class TestKvCellImage : public QObject {
  Q_OBJECT
 private slots:
  void scanlinesEqualThePainterReference_data() {
    QTest::addColumn<int>("blocks");
    QTest::addColumn<int>("hostBlocks");
    QTest::addColumn<QSize>("size");
    QTest::addColumn<int>("scale");
    QTest::addColumn<bool>("dark");
    QTest::newRow("large cells") << 8 << 2 << QSize(300, 200) << 1 << false;
    QTest::newRow("large cells, dark") << 8 << 2 << QSize(300, 200) << 1 << true;
    QTest::newRow("large cells, dpr 2") << 8 << 2 << QSize(300, 200) << 2 << false;
    QTest::newRow("gapped, no host pool") << 500 << 0 << QSize(330, 250) << 1 << false;
    QTest::newRow("gapped, dpr 2") << 500 << 40 << QSize(330, 250) << 2 << true;
    QTest::newRow("5 px, the smallest with outlines") << 2000 << 60 << QSize(300, 300) << 1 << false;
    QTest::newRow("no gaps") << 3000 << 100 << QSize(200, 150) << 1 << false;
    QTest::newRow("1 px, clipped at the bottom") << 20000 << 100 << QSize(100, 80) << 1 << false;
    QTest::newRow("no gaps, dpr 2") << 3000 << 100 << QSize(200, 150) << 2 << false;
  }
  void scanlinesEqualThePainterReference() {
    QFETCH(int, blocks);
    QFETCH(int, hostBlocks);
    QFETCH(QSize, size);
    QFETCH(int, scale);
    QFETCH(bool, dark);
    const PoolFrame frame = mixedFrame(blocks, hostBlocks);
    const KvCellModel model = buildKvCellModel(frame);
    const KvCellColors colors = KvCellColors::fromPalette(dark ? darkPalette() : QPalette());
    QVERIFY(kvCellFillsAreOpaque(colors));
    const QRect widget(QPoint(0, 0), size);
    const KvGridLayout g = KvGridLayout::compute(widget.adjusted(4, 4, -4, -4), blocks, hostBlocks);

    QImage reference(size * scale, QImage::Format_RGB32);
    reference.setDevicePixelRatio(scale);
    reference.fill(Qt::magenta);  // anything left unpainted shows
    {
      QPainter p(&reference);
      paintKvCells(p, widget, g, model, colors);
    }
    QImage scanned(size * scale, QImage::Format_RGB32);
    scanned.setDevicePixelRatio(scale);
    scanned.fill(Qt::magenta);
    fillKvCells(scanned, scale, g, model, colors);

    for (int y = 0; y < reference.height(); ++y)
      for (int x = 0; x < reference.width(); ++x)
        if (scanned.pixel(x, y) != reference.pixel(x, y))
          QFAIL(qPrintable(QStringLiteral("pixel (%1, %2), cell size %3: %4, reference %5")
                               .arg(x)
                               .arg(y)
                               .arg(g.cellSize)
                               .arg(scanned.pixel(x, y), 8, 16)
                               .arg(reference.pixel(x, y), 8, 16)));
  }

  void translucentColoursAreNotForScanlines() {
    KvCellColors colors = KvCellColors::fromPalette(QPalette());
    colors.background.setAlpha(128);
    QVERIFY(!kvCellFillsAreOpaque(colors));
  }

  // A cached block of no owner (our pool's) is the cached grey; one a prefix owns (a vLLM
  // cache's) is tinted toward that prefix's colour, each prefix its own.
  void aCachedBlockOfAPrefixIsTintedWithIt() {
    const KvCellColors colors = KvCellColors::fromPalette(QPalette());
    KvCell cell;
    cell.kind = KvCellKind::Cached;
    QCOMPARE(colors.fill(cell), colors.cached);
    cell.colorIndex = 1;
    const QColor one = colors.fill(cell);
    cell.colorIndex = 2;
    const QColor two = colors.fill(cell);
    QVERIFY(one != colors.cached && two != colors.cached && one != two);
    cell.kind = KvCellKind::InUse;
    QVERIFY(colors.fill(cell) != two);  // in use: the chat's own colour, not the tint
  }
};

QTEST_MAIN(TestKvCellImage)
#include "test_kv_cell_image.moc"
