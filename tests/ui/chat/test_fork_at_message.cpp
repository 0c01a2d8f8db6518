// Forking a chat at an earlier message, driven through the real window: the child shares the
// parent's KV blocks up to where its messages end (a fork at that token), so its next turn
// computes only its new text, as the engine's prefill counter shows. At a question the child
// stops before it and opens with that question in the input, to edit and send; at a reply it
// keeps the reply and opens empty.

#include <QtTest>

#include <QPlainTextEdit>

#include "support/test_env.h"
#include "support/window_driver.h"
#include "appcore/session/pool_control.h"
#include "ui/shell/main_window.h"

class TestForkAtMessage : public QObject {
  Q_OBJECT
  QString m_model;

  // The engine's counters as the last pool frame says, once the work has ended.
  static pagedchat::EngineStats settledStats(QSignalSpy& frames) {
    QTest::qWait(300);
    return frames.last()[0].value<PoolFrame>().stats;
  }

  ChatId threeTurns(MainWindow& w) {
    const ChatId parent = w.newChat();
    for (const char* q : {"Name a river.", "Name a mountain.", "Name a desert."}) pagedchat::test::sendAndWait(w, q);
    return parent;
  }

 private slots:
  void initTestCase() {
    pagedchat::test::useFreshDataFolder();
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    m_model = QString::fromStdString(model);
  }

  void forkAtTheFirstQuestionComputesOnlyTheNewText() {
    AppServices services;
    MainWindow w(services);
    w.show();
    pagedchat::test::loadAndWait(w, m_model);
    const ChatId parent = threeTurns(w);
    QCOMPARE(w.chat(parent)->messages.size(), 6);
    QSignalSpy frames(&w.session().pool(), &PoolControl::localFrame);

    const ChatId child = w.forkChat(parent, 1);  // at message 1: the first question
    QCOMPARE(w.currentChat(), child);
    QCOMPARE(w.chat(child)->messages.size(), 0);
    auto* input = w.findChild<QPlainTextEdit*>(QStringLiteral("input"));
    QCOMPARE(input->toPlainText(), QStringLiteral("Name a river."));  // ready to edit
    // The child holds the template's system prompt tokens, shared with the parent.
    QTRY_VERIFY_WITH_TIMEOUT(w.contextUsed(child) > 0, 10000);
    const int shared = w.contextUsed(child);
    const pagedchat::EngineStats before = settledStats(frames);

    input->setPlainText(QStringLiteral("Name a lake."));
    QSignalSpy done(&w, &MainWindow::turnDone);
    QTest::keyClick(input, Qt::Key_Return, Qt::ControlModifier);
    QVERIFY(done.wait(120000));
    const pagedchat::EngineStats after = settledStats(frames);
    const ReplyMetrics m = w.chat(child)->messages.last().metrics;
    QCOMPARE(w.chat(child)->messages.size(), 2);
    // Only the new turn's tokens were computed: nothing of the shared prefix, nothing cached.
    QCOMPARE(after.num_prefill_tokens - before.num_prefill_tokens, m.numPromptTokens);
    QCOMPARE(m.numCachedPromptTokens, 0);
    QVERIFY2(m.numPromptTokens > 0 && m.numPromptTokens < 20, qPrintable(QString::number(m.numPromptTokens)));
    QCOMPARE(w.contextUsed(child), shared + static_cast<int>(m.numPromptTokens) + m.numTokens);
    // The parent is untouched and continues as before.
    QCOMPARE(w.chat(parent)->messages.size(), 6);
  }

  void forkAtAReplyKeepsItAndSharesItsTokens() {
    AppServices services;
    MainWindow w(services);
    w.show();
    pagedchat::test::loadAndWait(w, m_model);
    const ChatId parent = threeTurns(w);
    QSignalSpy frames(&w.session().pool(), &PoolControl::localFrame);
    const ChatId child = w.forkChat(parent, 4);  // at message 4: the second reply
    QCOMPARE(w.chat(child)->messages.size(), 4);
    QVERIFY(w.findChild<QPlainTextEdit*>(QStringLiteral("input"))->toPlainText().isEmpty());
    QTRY_VERIFY_WITH_TIMEOUT(w.contextUsed(child) > 0, 10000);
    QVERIFY(w.contextUsed(child) < w.contextUsed(parent));
    const pagedchat::EngineStats before = settledStats(frames);
    pagedchat::test::sendAndWait(w, QStringLiteral("Name a forest."));
    const pagedchat::EngineStats after = settledStats(frames);
    const ReplyMetrics m = w.chat(child)->messages.last().metrics;
    QCOMPARE(after.num_prefill_tokens - before.num_prefill_tokens, m.numPromptTokens);
    QVERIFY2(m.numPromptTokens < 20, qPrintable(QString::number(m.numPromptTokens)));
    // The shared partial block at the cut was copied once, on the child's first write.
    QVERIFY(after.kv.num_cow_copies - before.kv.num_cow_copies <= 1);
  }
};

QTEST_MAIN(TestForkAtMessage)
#include "test_fork_at_message.moc"
