// Stepping the real engine from the toolbar while paused, as a teacher does: "Next event" runs
// steps until one changes a block and the event log then tells it; "Step ×10" runs ten steps,
// a pool frame after each; nothing runs while paused otherwise.

#include <QtTest>

#include <QAction>
#include <QPlainTextEdit>

#include "support/test_env.h"
#include "support/window_driver.h"
#include "ui/pool_panel/kv_event_log.h"
#include "ui/pool_panel/kv_pool_panel.h"
#include "appcore/session/pool_control.h"
#include "ui/chat/chat_panel.h"
#include "ui/shell/main_window.h"

class TestKvStepControls : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { pagedchat::test::useFreshDataFolder(); }

  void nextEventAndTenSteps() {
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    AppServices services;
    MainWindow w(services);
    w.show();
    pagedchat::test::loadAndWait(w, QString::fromStdString(model));
    KvEventLogView* log = w.findChild<KvPoolPanel*>(QStringLiteral("kvPoolPanel"))->eventLog();
    std::vector<int64_t> steps;
    int eventFrames = 0;
    connect(&w.session().pool(), &PoolControl::localFrame, this, [&](const PoolFrame& f) {
      steps.push_back(f.stepIndex);
      eventFrames += f.events.empty() ? 0 : 1;
    });
    w.findChild<QAction*>(QStringLiteral("pauseEngine"))->trigger();
    w.newChat();
    auto* input = w.findChild<QPlainTextEdit*>(QStringLiteral("input"));
    input->setPlainText(QStringLiteral("Tell me about the sea."));
    w.chatPanel()->send();
    QTest::qWait(300);
    QVERIFY(w.isReplying(w.currentChat()));  // paused: the turn waits
    const int linesBefore = static_cast<int>(log->shownLines().size());

    steps.clear();
    eventFrames = 0;
    w.findChild<QAction*>(QStringLiteral("stepToNextKvEvent"))->trigger();
    QTRY_VERIFY(eventFrames >= 1);
    QTRY_VERIFY(static_cast<int>(log->shownLines().size()) > linesBefore);
    QVERIFY2(log->shownLines().last().contains(QStringLiteral("gets block")), qPrintable(log->shownLines().last()));  // the prompt's blocks

    QTest::qWait(100);
    steps.clear();
    w.findChild<QAction*>(QStringLiteral("stepEngine10"))->trigger();
    QTRY_COMPARE(steps.size(), size_t(10));
    for (size_t i = 1; i < steps.size(); ++i) QCOMPARE(steps[i], steps[i - 1] + 1);  // one frame a step
    QTest::qWait(200);
    QCOMPARE(steps.size(), size_t(10));  // and no more: still paused

    w.findChild<QAction*>(QStringLiteral("pauseEngine"))->trigger();  // runs to the end
    QSignalSpy done(&w, &MainWindow::turnDone);
    QVERIFY(done.wait(60000));
  }
};

QTEST_MAIN(TestKvStepControls)
#include "test_kv_step_controls.moc"
