// Each lesson, run headless as a teacher runs it: Start sets the scene up on the real engine
// (the teaching preset), paused; Next event is pressed until the lesson's key event, asserted
// from the engine's own events; the panel's sentence names it. The fork lesson copies exactly
// one block on write (the shared partial block); the prefix lesson serves the system prompt's
// full blocks from the cache; the allocation lesson allocates on demand.

#include <QtTest>

#include <QDockWidget>
#include <QListWidget>
#include <QPushButton>

#include "support/test_env.h"
#include "support/window_driver.h"
#include "ui/lessons/lesson_runner.h"
#include "ui/lessons/lessons_panel.h"
#include "ui/shell/main_window.h"

using pagedchat::KvEventKind;

class TestLessons : public QObject {
  Q_OBJECT
  QString m_model;

  // Starts lesson `id` from the panel and presses Next event until its key event (or 40 presses).
  void runLesson(MainWindow& w, const QString& id) {
    LessonRunner* runner = w.lessons();
    auto* panel = w.findChild<LessonsPanel*>(QStringLiteral("lessonsPanel"));
    QVERIFY(runner && panel);
    auto* list = panel->findChild<QListWidget*>(QStringLiteral("lessonList"));
    for (int i = 0; i < list->count(); ++i)
      if (list->item(i)->data(Qt::UserRole).toString() == id) list->setCurrentRow(i);
    panel->findChild<QPushButton*>(QStringLiteral("startLesson"))->click();
    QTRY_VERIFY_WITH_TIMEOUT(runner->state() == LessonRunner::State::ready || runner->state() == LessonRunner::State::failed, 120000);
    QCOMPARE(runner->state(), LessonRunner::State::ready);
    QCOMPARE(panel->sentenceShown(), runner->current()->intro);
    auto* next = panel->findChild<QPushButton*>(QStringLiteral("lessonNextEvent"));
    QVERIFY(next->isEnabled());
    for (int press = 0; press < 40 && runner->state() != LessonRunner::State::reached; ++press) {
      const QString before = runner->lastSentence();
      next->click();
      QTest::qWaitFor([&] { return runner->lastSentence() != before || runner->state() == LessonRunner::State::reached; }, 5000);
    }
    QCOMPARE(runner->state(), LessonRunner::State::reached);
    QCOMPARE(panel->sentenceShown(), runner->lastSentence());
  }

 private slots:
  void initTestCase() {
    pagedchat::test::useFreshDataFolder();
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    m_model = QString::fromStdString(model);
  }

  void theLessonsArePanelsBesideTheChats() {
    AppServices services;
    MainWindow w(services);
    auto* dock = w.findChild<QDockWidget*>(QStringLiteral("lessonsDock"));
    QVERIFY(dock);
    QCOMPARE(w.tabifiedDockWidgets(dock).size(), 1);  // a tab beside the chat list
    QCOMPARE(LessonRunner::lessons().size(), 3);
  }

  void aForkCopiesItsSharedPartialBlockOnceOnWrite() {
    AppServices services;
    MainWindow w(services);
    w.show();
    pagedchat::test::loadAndWait(w, m_model);
    runLesson(w, QStringLiteral("fork"));
    QVERIFY(w.settings().teachingPreset);
    QCOMPARE(w.lessons()->eventCount(KvEventKind::copy_on_write), 1);
    QVERIFY2(w.lessons()->lastSentence().contains(QStringLiteral("Chat B writes into shared block #")), qPrintable(w.lessons()->lastSentence()));
    // Run to end: the fork's reply finishes, the engine runs again.
    QSignalSpy done(&w, &MainWindow::turnDone);
    w.findChild<QPushButton*>(QStringLiteral("lessonRunToEnd"))->click();
    QVERIFY(done.wait(60000));
    QCOMPARE(w.lessons()->eventCount(KvEventKind::copy_on_write), 1);  // the rest writes the child's own copy

    // Replay from a fresh scene: the same key event again.
    runLesson(w, QStringLiteral("prefix"));
    QVERIFY(w.lessons()->eventCount(KvEventKind::cache_hit) >= 2);  // the prompt's full blocks of the system prompt
    QVERIFY2(w.lessons()->lastSentence().contains(QStringLiteral("Chat B's prompt finds blocks")), qPrintable(w.lessons()->lastSentence()));

    runLesson(w, QStringLiteral("allocation"));
    QVERIFY(w.lessons()->eventCount(KvEventKind::allocate) >= 1);
    QVERIFY2(w.lessons()->lastSentence().contains(QStringLiteral("Chat A gets block")), qPrintable(w.lessons()->lastSentence()));
    w.findChild<QPushButton*>(QStringLiteral("lessonRunToEnd"))->click();
    QVERIFY(done.wait(60000));
  }
};

QTEST_MAIN(TestLessons)
#include "test_lessons.moc"
