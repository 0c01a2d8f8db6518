// A reply cut by its length limit is flagged under it with Continue, and Continue writes more
// of the same reply: it goes on from the parked sequence (one token computed, the one sampled
// last), and the reply then equals, word for word, a greedy reply given twice the length from
// the start.

#include <QtTest>

#include <QTextBrowser>

#include "support/test_env.h"
#include "support/window_driver.h"
#include "ui/shell/main_window.h"

class TestContinueReply : public QObject {
  Q_OBJECT
  QString m_model;

  void greedy(MainWindow& w, int maxTokens) {
    AppSettings s = w.settings();
    s.sampling.maxTokens = maxTokens;
    s.sampling.temperature = 0.0;
    w.applySettings(s);
  }

 private slots:
  void initTestCase() {
    pagedchat::test::useFreshDataFolder();
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    m_model = QString::fromStdString(model);
  }

  void continueWritesMoreOfTheSameReply() {
    AppServices services;
    MainWindow w(services);
    w.show();
    pagedchat::test::loadAndWait(w, m_model);
    const QString question = QStringLiteral("Tell me a long story about a dragon and a lighthouse.");
    greedy(w, 12);
    const ChatId cut = w.newChat();
    pagedchat::test::sendAndWait(w, question);
    const MessageRecord first = w.chat(cut)->messages.last();
    QCOMPARE(first.metrics.finishReason, QStringLiteral("length"));
    QCOMPARE(first.metrics.numTokens, 12);
    auto* transcript = w.findChild<QTextBrowser*>(QStringLiteral("transcript"));
    QVERIFY(transcript->toPlainText().contains(QStringLiteral("cut at its length limit")));
    QVERIFY(transcript->toPlainText().contains(QStringLiteral("continue")));

    QSignalSpy done(&w, &MainWindow::turnDone);
    emit transcript->anchorClicked(QUrl(QStringLiteral("continue:1")));
    QVERIFY(done.wait(120000));
    const MessageRecord more = w.chat(cut)->messages.last();
    QCOMPARE(w.chat(cut)->messages.size(), 2);  // the same reply, longer
    QVERIFY(more.content.startsWith(first.content) && more.content.size() > first.content.size());
    QCOMPARE(more.metrics.numTokens, 24);
    QCOMPARE(more.metrics.numPromptTokens, 1);  // only the token sampled last was computed

    greedy(w, 24);
    const ChatId whole = w.newChat();
    pagedchat::test::sendAndWait(w, question);
    QCOMPARE(w.chat(whole)->messages.last().content, more.content);
  }
};

QTEST_MAIN(TestContinueReply)
#include "test_continue_reply.moc"
