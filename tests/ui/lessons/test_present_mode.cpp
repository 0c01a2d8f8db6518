// Present mode, as a teacher uses it in front of a class: F5 gives the pool most of the window
// (the chats a narrow strip) with the sentence of the moment under it in large type, and F5
// again puts every dock back where it was; a lesson presents by itself from Start, its cells
// at least 28 px (block numbers and ref counts legible from the back of a room) at 1366x768 and
// at 1920x1080, the caption its introduction and then each event's sentence; leaving the lesson
// restores the layout. Checked by geometry.
#include <QtTest>

#include <QAction>
#include <QDockWidget>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>

#include "appcore/lessons/lesson_runner.h"
#include "support/test_env.h"
#include "support/window_driver.h"
#include "ui/lessons/lessons_panel.h"
#include "ui/pool_panel/kv_dock.h"
#include "ui/pool_panel/kv_event_log.h"
#include "ui/pool_panel/kv_pool_panel.h"
#include "ui/pool_view/kv_pool_view.h"
#include "ui/shell/main_window.h"

class TestPresentMode : public QObject {
  Q_OBJECT
  QString m_model;

  static int poolViewWidth(MainWindow& w) { return w.kvDock()->panel()->poolView()->width(); }

  void startLesson(MainWindow& w, const QString& id) {
    auto* panel = w.findChild<LessonsPanel*>(QStringLiteral("lessonsPanel"));
    auto* list = panel->findChild<QListWidget*>(QStringLiteral("lessonList"));
    for (int i = 0; i < list->count(); ++i)
      if (list->item(i)->data(Qt::UserRole).toString() == id) list->setCurrentRow(i);
    panel->findChild<QPushButton*>(QStringLiteral("startLesson"))->click();
    QTRY_VERIFY_WITH_TIMEOUT(w.lessons()->state() == LessonRunner::State::ready || w.lessons()->state() == LessonRunner::State::failed,
                             120000);
    QCOMPARE(w.lessons()->state(), LessonRunner::State::ready);
  }

  void lessonIsOnStage(MainWindow& w, QSize size) {
    w.resize(size);
    QTRY_COMPARE_WITH_TIMEOUT(w.size(), size, 5000);
    startLesson(w, QStringLiteral("allocation"));
    QVERIFY(w.presenting());
    // The event log tells this lesson's story only: no line of a step before the scene's.
    for (const QString& line : w.kvDock()->panel()->eventLog()->shownLines())
      QVERIFY2(!line.contains(QStringLiteral("Chat B")), qPrintable(line));
    KvPoolPanel* panel = w.kvDock()->panel();
    QTRY_VERIFY_WITH_TIMEOUT(panel->captionShown() == w.lessons()->current()->intro, 5000);
    QTest::qWait(50);  // (the docks' new sizes are laid out)
    const KvGridLayout g = panel->poolView()->gridLayout();
    qInfo("%dx%d: pool view %dx%d, %d cells of %d px, caption %d px", size.width(), size.height(), panel->poolView()->width(),
          panel->poolView()->height(), g.numCells, g.cellSize, panel->captionLabel()->font().pixelSize());
    QVERIFY2(g.cellSize >= 28, qPrintable(QString::number(g.cellSize)));
    QVERIFY(poolViewWidth(w) * 2 >= w.width());
    QVERIFY(panel->captionLabel()->font().pixelSize() >= 22);
    // Each event's sentence takes the caption's place.
    const QString before = w.lessons()->lastSentence();
    w.findChild<QPushButton*>(QStringLiteral("lessonNextEvent"))->click();
    QTRY_VERIFY_WITH_TIMEOUT(w.lessons()->lastSentence() != before, 10000);
    QTRY_COMPARE_WITH_TIMEOUT(panel->captionShown(), w.lessons()->lastSentence(), 5000);
    w.lessons()->leave();
    QTRY_VERIFY_WITH_TIMEOUT(!w.presenting(), 30000);
    QVERIFY(!panel->captionLabel()->isVisible());
  }

 private slots:
  void initTestCase() {
    pagedchat::test::useFreshDataFolder();
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    m_model = QString::fromStdString(model);
  }

  void f5PutsThePoolOnStageAndBack() {
    AppServices services;
    MainWindow w(services);
    w.resize(1366, 768);
    w.show();
    pagedchat::test::loadAndWait(w, m_model);
    QTest::qWait(50);
    const int dockBefore = w.kvDock()->width(), viewBefore = poolViewWidth(w);
    auto* present = w.findChild<QAction*>(QStringLiteral("presentAction"));
    QVERIFY(present);
    QCOMPARE(present->shortcut(), QKeySequence(Qt::Key_F5));
    present->trigger();
    QVERIFY(w.presenting());
    QTest::qWait(50);
    qInfo("pool view %d px wide of %d (%d before); dock %d, central %d (min %d), legend column %d", poolViewWidth(w), w.width(), viewBefore,
          w.kvDock()->width(), w.centralWidget()->width(), w.centralWidget()->minimumSizeHint().width(),
          w.kvDock()->panel()->width() - poolViewWidth(w));
    QVERIFY2(poolViewWidth(w) * 2 >= w.width(), qPrintable(QString::number(poolViewWidth(w))));
    QVERIFY(poolViewWidth(w) > 2 * viewBefore);
    QVERIFY(w.kvDock()->panel()->captionLabel()->isVisible());
    QVERIFY(!w.centralWidget()->isVisible());  // the transcript steps aside
    auto* chats = w.findChild<QDockWidget*>(QStringLiteral("chatsDock"));
    QVERIFY(chats->isVisible() && chats->width() <= w.width() / 5);  // the chats: a strip
    present->trigger();
    QVERIFY(!w.presenting());
    QTest::qWait(50);
    QVERIFY2(std::abs(w.kvDock()->width() - dockBefore) <= 2, qPrintable(QString("%1 against %2").arg(w.kvDock()->width()).arg(dockBefore)));
    QVERIFY(!w.kvDock()->panel()->captionLabel()->isVisible());
    QVERIFY(w.centralWidget()->isVisible());
  }

  void aLessonIsOnStageAt1366x768() {
    AppServices services;
    MainWindow w(services);
    w.show();
    pagedchat::test::loadAndWait(w, m_model);
    lessonIsOnStage(w, QSize(1366, 768));
  }

  void aLessonIsOnStageAt1920x1080() {
    AppServices services;
    MainWindow w(services);
    w.show();
    pagedchat::test::loadAndWait(w, m_model);
    // A lesson with three chats first: its lines (Chat B's, Chat C's) must not stay in the log of the next.
    startLesson(w, QStringLiteral("contiguous"));
    auto* step = w.findChild<QPushButton*>(QStringLiteral("lessonStep"));
    auto logNamesChatB = [&] { return w.kvDock()->panel()->eventLog()->shownLines().join(' ').contains(QStringLiteral("Chat B")); };
    for (int i = 0; i < 30 && !logNamesChatB(); ++i) {
      step->click();
      QTest::qWait(200);
    }
    QVERIFY(logNamesChatB());
    lessonIsOnStage(w, QSize(1920, 1080));
  }
};

QTEST_MAIN(TestPresentMode)
#include "test_present_mode.moc"
