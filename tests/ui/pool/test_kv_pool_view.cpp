// The block-pool cell grid as painted: cell colours sampled from a grab of the widget for free,
// in use, shared, cached and swapped cells, in a light and a dark palette; the hover tooltip
// with the tokens' text; a click selecting the owning chat; event flashes that start on the
// frame and end after the fade.

#include <QtTest>

#include <QApplication>
#include <QHelpEvent>
#include <QImage>
#include <QToolTip>

#include "engine/kv/kv_manager.h"
#include "ui/pool_view/kv_pool_view.h"
#include "support/kv_test_frames.h"

using namespace pagedchat;
using namespace kvtest;

namespace {
// A point inside the cell away from its outline and from the count drawn at its centre.
QPoint samplePoint(const QRect& r) { return r.topLeft() + QPoint(r.width() / 4, r.height() / 4); }

QPalette darkPalette() {
  QPalette p;
  p.setColor(QPalette::Window, QColor(30, 30, 30));
  p.setColor(QPalette::Base, QColor(20, 20, 20));
  p.setColor(QPalette::Text, QColor(230, 230, 230));
  p.setColor(QPalette::WindowText, QColor(230, 230, 230));
  p.setColor(QPalette::Highlight, QColor(60, 120, 220));
  return p;
}

int distance(const QColor& a, const QColor& b) {
  return std::abs(a.red() - b.red()) + std::abs(a.green() - b.green()) + std::abs(a.blue() - b.blue());
}
}  // namespace

class TestKvPoolView : public QObject {
  Q_OBJECT
 private slots:
  void cellsArePaintedInTheirStateColours_data() {
    QTest::addColumn<bool>("dark");
    QTest::newRow("light") << false;
    QTest::newRow("dark") << true;
  }
  void cellsArePaintedInTheirStateColours() {
    QFETCH(bool, dark);
    KvPoolView view;
    if (dark) view.setPalette(darkPalette());
    view.resize(300, 200);
    view.setFrame(std::make_shared<const PoolFrame>(handFrame()));
    const QImage img = view.grab().toImage();
    const KvGridLayout g = view.gridLayout();
    QVERIFY(g.cellSize >= 12);  // large enough for the count to be drawn
    const KvCellColors& c = view.colors();
    QCOMPARE(c.dark, dark);
    auto at = [&](int block) { return img.pixel(samplePoint(g.cellRect(block))); };
    QCOMPARE(at(0), c.chat(0).rgb());  // in use by Alpha
    QCOMPARE(at(1), c.chat(0).rgb());  // shared, first owner Alpha
    QCOMPARE(at(2), c.chat(1).rgb());  // in use by Beta
    QCOMPARE(at(3), c.cached.rgb());
    for (int b = 4; b < 8; ++b) QCOMPARE(at(b), c.free.rgb());
    // The host strip: the swapped block in Gamma's colour under the hatch, the free one free.
    QCOMPARE(img.pixel(samplePoint(g.hostCellRect(1))), c.free.rgb());
    bool chatSeen = false;
    const QRect h0 = g.hostCellRect(0);
    for (int x = h0.left(); x <= h0.right(); ++x) chatSeen |= img.pixel(x, h0.center().y()) == c.chat(2).rgb();
    QVERIFY(chatSeen);
    // The shared cell carries its count: its centre is not plain fill, an in-use cell's is.
    bool textSeen = false;
    const QRect r1 = g.cellRect(1);
    for (int y = r1.top() + 2; y < r1.bottom() - 1; ++y)
      for (int x = r1.left() + 2; x < r1.right() - 1; ++x) textSeen |= distance(img.pixelColor(x, y), c.chat(0)) > 150;
    QVERIFY(textSeen);
    QCOMPARE(img.pixel(g.cellRect(0).center()), c.chat(0).rgb());
    // The cached cell is outlined.
    QVERIFY(img.pixel(g.cellRect(3).topLeft()) != c.cached.rgb() || img.pixel(g.cellRect(3).topLeft() + QPoint(1, 0)) != c.cached.rgb());
    // Every state reads apart from the free cells in this theme.
    for (const QColor& x : {c.chat(0), c.chat(1), c.chat(2), c.cached}) QVERIFY(distance(x, c.free) > 60);
  }

  void cellsResizeWithTheWidget() {
    KvPoolView view;
    view.resize(120, 90);
    view.setFrame(std::make_shared<const PoolFrame>(handFrame()));
    const int small = view.gridLayout().cellSize;
    view.resize(400, 300);
    QVERIFY(view.gridLayout().cellSize > small);
  }

  void aRealManagerPoolPaintsSharedAndCachedCells() {
    KvManager kv({.num_blocks = 32, .block_size = 4});
    runPrompt(kv, 9, iota(200, 8));
    kv.free(9);  // 2 cached blocks
    runPrompt(kv, 1, iota(1, 6));
    kv.fork(1, 2);
    kv.take_events();  // the cells in their own colours: no allocation flashing over them
    KvPoolView view;
    view.resize(320, 240);
    view.setFrame(std::make_shared<const PoolFrame>(frameFrom(kv, {{1, "Parent", 4}, {2, "Fork", 5}})));
    const KvCellModel& m = view.cellModel();
    const QImage img = view.grab().toImage();
    const KvGridLayout g = view.gridLayout();
    int shared = 0, cached = 0, free = 0;
    for (size_t b = 0; b < m.cells.size(); ++b) {
      QCOMPARE(img.pixel(samplePoint(g.cellRect(static_cast<int>(b)))), view.colors().fill(m.cells[b]).rgb());
      shared += m.cells[b].kind == KvCellKind::Shared;
      cached += m.cells[b].kind == KvCellKind::Cached;
      free += m.cells[b].kind == KvCellKind::Free;
    }
    QCOMPARE(shared, 2);
    QCOMPARE(cached, 2);
    QCOMPARE(free, 28);
    QCOMPARE(view.colors().fill(m.cells[kv.block_table(1)[0]]), view.colors().chat(4));
  }

  void hoveringACellShowsItsTokens() {
    KvManager kv({.num_blocks = 16, .block_size = 4});
    runPrompt(kv, 1, iota(1, 6));
    KvPoolView view;
    view.resize(300, 200);
    view.setFrame(std::make_shared<const PoolFrame>(frameFrom(kv, {{1, "Hello chat", 0}})));
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    const QPoint pos = view.gridLayout().cellRect(kv.block_table(1)[1]).center();
    const QString plain = view.tooltipAt(pos);
    QVERIFY2(plain.contains(QStringLiteral("w5 w6")), qPrintable(plain));
    QVERIFY2(plain.contains(QStringLiteral("Hello chat (seq 1)")), qPrintable(plain));
    QHelpEvent help(QEvent::ToolTip, pos, view.mapToGlobal(pos));
    QApplication::sendEvent(&view, &help);
    QTRY_VERIFY(QToolTip::isVisible());
    QVERIFY2(QToolTip::text().contains(QStringLiteral("w5 w6")), qPrintable(QToolTip::text()));
    QToolTip::hideText();
    // Away from the cells: nothing.
    QVERIFY(view.tooltipAt(QPoint(view.width() - 1, view.height() - 1)).isEmpty());
  }

  void clickingACellSelectsItsChat() {
    KvPoolView view;
    view.resize(300, 200);
    view.setFrame(std::make_shared<const PoolFrame>(handFrame()));
    QSignalSpy clicked(&view, &KvPoolView::sequenceClicked);
    const KvGridLayout g = view.gridLayout();
    QTest::mouseClick(&view, Qt::LeftButton, {}, g.cellRect(2).center());
    QCOMPARE(clicked.size(), 1);
    QCOMPARE(clicked[0][0].value<SequenceId>(), SequenceId(2));
    QCOMPARE(view.selectedSequence(), SequenceId(2));
    // The selected chat's cells are outlined in the highlight colour.
    const QImage img = view.grab().toImage();
    QCOMPARE(img.pixel(g.cellRect(2).topLeft() + QPoint(0, g.cellRect(2).height() / 2)), view.colors().selection.rgb());
    QVERIFY(img.pixel(g.cellRect(0).topLeft() + QPoint(0, g.cellRect(0).height() / 2)) != view.colors().selection.rgb());
    QTest::mouseClick(&view, Qt::LeftButton, {}, g.cellRect(5).center());  // a free cell
    QCOMPARE(view.selectedSequence(), SequenceId(-1));
  }

  // Plain allocations and frees flash too (orange, and black or white), where no other event
  // marks the cell.
  void allocationsAndFreesHaveTheirOwnMarks() {
    KvManager kv({.num_blocks = 16, .block_size = 4});
    runPrompt(kv, 1, iota(1, 6));
    KvPoolView view;
    view.resize(300, 200);
    view.setFrame(std::make_shared<const PoolFrame>(frameFrom(kv, {{1, "A", 0}})));
    const std::vector<int32_t> table(kv.block_table(1).begin(), kv.block_table(1).end());
    QCOMPARE(view.flashes().device().size(), table.size());
    for (int32_t b : table) QCOMPARE(view.flashes().device().at(b).kind, KvFlashKind::Allocate);
    kv.free(1);
    view.setFrame(std::make_shared<const PoolFrame>(frameFrom(kv, {})));
    for (int32_t b : table) QCOMPARE(view.flashes().device().at(b).kind, KvFlashKind::Free);
    QVERIFY(view.colors().flash(KvFlashKind::Allocate) != view.colors().flash(KvFlashKind::Evict));
  }

  void eventsFlashTheirCellsAndTheFlashEnds() {
    KvManager kv({.num_blocks = 16, .block_size = 4});
    runPrompt(kv, 1, iota(1, 6));
    kv.fork(1, 2);
    KvPoolView view;
    view.resize(300, 200);
    view.setFrame(std::make_shared<const PoolFrame>(frameFrom(kv, {{1, "A", 0}, {2, "B", 1}})));
    QTRY_VERIFY(!view.isAnimating());  // the fork itself flashes nothing
    append(kv, 2, {7});                // copy-on-write
    const PoolFrame f = frameFrom(kv, {{1, "A", 0}, {2, "B", 1}});
    const int32_t copy = kv.block_table(2)[1];
    view.setFrame(std::make_shared<const PoolFrame>(f));
    QVERIFY(view.isAnimating());
    QCOMPARE(view.flashes().device().size(), size_t(2));
    QCOMPARE(view.flashes().device().at(copy).kind, KvFlashKind::CopyOnWrite);
    const QPoint p = samplePoint(view.gridLayout().cellRect(copy));
    const QColor flash = view.colors().flash(KvFlashKind::CopyOnWrite);
    const QColor fill = view.colors().chat(1);
    // At once the cell is close to the flash colour, after the fade it is the plain fill.
    QVERIFY(distance(view.grab().toImage().pixelColor(p), flash) < distance(fill, flash) / 2);
    QTRY_VERIFY_WITH_TIMEOUT(!view.isAnimating(), 3000);
    QVERIFY(view.flashes().empty());
    QCOMPARE(view.grab().toImage().pixel(p), fill.rgb());
  }

  // Paused (held), a step's marks stay at full strength past the fade, until the next step's
  // events replace them; a frame with no events leaves them; running again, they fade.
  void whilePausedAStepsMarksStayUntilTheNextStep() {
    KvManager kv({.num_blocks = 16, .block_size = 4});
    runPrompt(kv, 1, iota(1, 6));
    kv.fork(1, 2);
    KvPoolView view;
    view.resize(300, 200);
    view.setFlashesHeld(true);
    view.setFrame(std::make_shared<const PoolFrame>(frameFrom(kv, {{1, "A", 0}, {2, "B", 1}})));
    append(kv, 2, {7});  // copy-on-write
    const int32_t copy = kv.block_table(2)[1];
    view.setFrame(std::make_shared<const PoolFrame>(frameFrom(kv, {{1, "A", 0}, {2, "B", 1}})));
    QVERIFY(!view.isAnimating());  // nothing to animate: the marks hold still
    const QPoint p = samplePoint(view.gridLayout().cellRect(copy));
    const QColor flash = view.colors().flash(KvFlashKind::CopyOnWrite);
    const QImage atOnce = view.grab().toImage();
    QTest::qWait(KvFlashes::kFadeMs + 200);
    QCOMPARE(view.grab().toImage().pixel(p), atOnce.pixel(p));  // still marked after the fade time
    QVERIFY(distance(atOnce.pixelColor(p), flash) < distance(view.colors().chat(1), flash) / 2);
    QCOMPARE(view.flashes().device().at(copy).kind, KvFlashKind::CopyOnWrite);
    // A report with no events (nothing happened) keeps the marks.
    PoolFrame quiet = frameFrom(kv, {{1, "A", 0}, {2, "B", 1}});
    quiet.events.clear();
    view.setFrame(std::make_shared<const PoolFrame>(quiet));
    QVERIFY(view.flashes().device().count(copy));
    // The next step's events replace them: a new sequence allocates, the copy is no longer marked.
    runPrompt(kv, 3, iota(20, 4));
    kv.free(3);
    const PoolFrame next = frameFrom(kv, {{1, "A", 0}, {2, "B", 1}});
    view.setFrame(std::make_shared<const PoolFrame>(next));
    QVERIFY(!next.events.empty());
    QVERIFY(!view.flashes().device().count(copy));
    // Running again: what is marked fades out.
    view.setFlashesHeld(false);
    QTRY_VERIFY_WITH_TIMEOUT(view.flashes().empty(), 3000);
  }

  // The cells are drawn into an image kept between paints: a new frame, a resize and a palette
  // change each draw it again; selecting repaints over it and leaves the fills as they were.
  void theKeptPictureFollowsFramesSizeAndPalette() {
    KvPoolView view;
    view.resize(300, 200);
    view.setFrame(std::make_shared<const PoolFrame>(handFrame()));
    auto paint = [&] {
      QImage img(view.size(), QImage::Format_ARGB32_Premultiplied);
      view.render(&img);
      return img;
    };
    auto at = [&](const QImage& img, int b) { return img.pixel(samplePoint(view.gridLayout().cellRect(b))); };
    const KvCellColors& c = view.colors();
    QImage img = paint();
    QCOMPARE(at(img, 2), c.chat(1).rgb());
    QCOMPARE(at(img, 4), c.free.rgb());
    QCOMPARE(at(img, 5), c.free.rgb());

    // Block 2 freed, block 4 now Alpha's, block 5 cached.
    PoolFrame next = handFrame();
    next.snapshot.blocks[2] = block(BlockState::free, 0, 0, {});
    next.snapshot.blocks[4] = block(BlockState::in_use, 1, 1, {1});
    next.snapshot.blocks[5] = block(BlockState::cached, 0, 4, {}, true);
    next.sequences[0].blockTable.push_back(4);
    view.setFrame(std::make_shared<const PoolFrame>(next));
    img = paint();
    QCOMPARE(at(img, 2), c.free.rgb());
    QCOMPARE(at(img, 4), c.chat(0).rgb());
    QCOMPARE(at(img, 5), c.cached.rgb());
    QCOMPARE(img.pixel(view.gridLayout().cellRect(5).topLeft()), c.cachedOutline.rgb());

    // Selecting draws over the kept picture; the fills stay.
    view.setSelectedSequence(1);
    img = paint();
    const QRect r4 = view.gridLayout().cellRect(4);
    QCOMPARE(img.pixel(r4.topLeft() + QPoint(0, r4.height() / 2)), c.selection.rgb());
    QCOMPARE(at(img, 4), c.chat(0).rgb());
    view.setSelectedSequence(-1);
    img = paint();
    QCOMPARE(img.pixel(r4.topLeft() + QPoint(0, r4.height() / 2)), c.chat(0).rgb());

    // A smaller widget: smaller cells, at their new places.
    const int before = view.gridLayout().cellSize;
    view.resize(120, 90);
    QVERIFY(view.gridLayout().cellSize < before);
    img = paint();
    QCOMPARE(img.size(), QSize(120, 90));
    QCOMPARE(at(img, 4), c.chat(0).rgb());
    QCOMPARE(at(img, 6), c.free.rgb());

    // A dark palette: the cells take its colours.
    view.setPalette(darkPalette());
    QVERIFY(view.colors().dark);
    img = paint();
    QCOMPARE(at(img, 4), view.colors().chat(0).rgb());
    QCOMPARE(at(img, 6), view.colors().free.rgb());
    QCOMPARE(img.pixel(0, 0), view.colors().background.rgb());
  }

  void aFrameWithoutEventsStartsNoTimer() {
    KvPoolView view;
    view.setFrame(std::make_shared<const PoolFrame>(handFrame()));
    QVERIFY(!view.isAnimating());
    QVERIFY(view.flashes().empty());
  }
};

QTEST_MAIN(TestKvPoolView)
#include "test_kv_pool_view.moc"
