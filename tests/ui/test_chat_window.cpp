// The first window drives the real engine: the default model loads on the engine thread, a
// message typed and sent streams a reply into the transcript, and a bad file is reported in
// the status line while the window stays usable.

#include <QtTest>

#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTextBrowser>

#include "support/test_env.h"
#include "ui/chat_window.h"

class TestChatWindow : public QObject {
  Q_OBJECT
 private slots:
  void sendsAMessageAndStreamsTheReply() {
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    ChatWindow w;
    w.show();
    QSignalSpy ready(&w, &ChatWindow::modelReady);
    QSignalSpy done(&w, &ChatWindow::replyDone);
    w.loadModel(QString::fromStdString(model), 2);
    QVERIFY(ready.wait(60000));
    auto* input = w.findChild<QLineEdit*>(QStringLiteral("input"));
    auto* transcript = w.findChild<QTextBrowser*>(QStringLiteral("transcript"));
    QVERIFY(input && transcript && input->isEnabled());
    QTest::keyClicks(input, QStringLiteral("What is the capital of France?"));
    QTest::keyClick(input, Qt::Key_Return);
    QVERIFY(input->text().isEmpty());
    QVERIFY(done.wait(120000));
    const QString text = transcript->toPlainText();
    QVERIFY2(text.contains(QStringLiteral("What is the capital of France?")), qPrintable(text));
    // The assistant's reply follows the label and is not empty.
    const QString reply = text.section(QStringLiteral("Assistant"), 1).trimmed();
    QVERIFY2(reply.size() > 3, qPrintable(text));
    QVERIFY(w.findChild<QLabel*>(QStringLiteral("status"))->text().contains(QStringLiteral("tok/s")));
  }

  void aBadFileIsReportedAndNothingBreaks() {
    PC_REQUIRE_ENV(data, "PAGEDCHAT_TEST_DATA");
    ChatWindow w;
    w.loadModel(QString::fromStdString(data + "/gguf_broken/tensor_past_end.bin"), 1);
    auto* status = w.findChild<QLabel*>(QStringLiteral("status"));
    QTRY_VERIFY_WITH_TIMEOUT(status->text().contains(QStringLiteral("not within the file")), 10000);
    QVERIFY(!w.findChild<QLineEdit*>(QStringLiteral("input"))->isEnabled());
  }
};

QTEST_MAIN(TestChatWindow)
#include "test_chat_window.moc"
