// A chat's own sampling settings, as a user sets them from the chat (the Sampling button under
// the input): the next reply samples with them while another chat keeps the app's defaults;
// they are saved with the chat, shown on the button, inherited by a fork, and "the app's
// defaults" takes them back. On the real engine; chats in a temporary data dir.

#include <QtTest>

#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QPushButton>
#include <QRadioButton>
#include <QSpinBox>
#include <QToolButton>

#include "support/test_env.h"
#include "support/window_driver.h"
#include "ui/dialogs/chat_sampling_dialog.h"
#include "ui/chat/chat_panel.h"
#include "ui/shell/main_window.h"

namespace {
// Opens the chat's sampling dialog from its button and returns it.
ChatSamplingDialog* openDialog(MainWindow& w) {
  w.findChild<QToolButton*>(QStringLiteral("chatSampling"))->click();
  ChatSamplingDialog* dialog = nullptr;
  (void)QTest::qWaitFor([&] { return (dialog = w.findChild<ChatSamplingDialog*>()) && dialog->isVisible(); }, 5000);
  return dialog;
}
// OK, then the window is the active one again (its keys go to it).
void accept(MainWindow& w, ChatSamplingDialog* dialog) {
  QTest::mouseClick(dialog->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok), Qt::LeftButton);
  QTRY_VERIFY(!dialog->isVisible());
  w.activateWindow();
  QVERIFY(QTest::qWaitForWindowActive(&w));
}
}  // namespace

class TestChatSampling : public QObject {
  Q_OBJECT
  QString m_model;

 private slots:
  void initTestCase() {
    pagedchat::test::useFreshDataFolder();
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    m_model = QString::fromStdString(model);
  }

  void theChatsOwnSettingsApplyToItsNextReplyOnly() {
    const QString question = QStringLiteral("Tell me a long story about a dragon.");
    ChatId own = -1, fork = -1;
    {
      AppServices services;
      MainWindow w(services);
      w.show();
      QVERIFY(QTest::qWaitForWindowExposed(&w));
      pagedchat::test::loadAndWait(w, m_model);
      const int appMax = w.settings().sampling.maxTokens;
      QVERIFY(appMax > 5);

      own = w.newChat();
      ChatSamplingDialog* dialog = openDialog(w);
      QVERIFY(dialog);
      QVERIFY(dialog->findChild<QRadioButton*>(QStringLiteral("useAppSampling"))->isChecked());  // a new chat: the app's
      // Editing a value chooses the chat's own settings.
      dialog->findChild<QSpinBox*>(QStringLiteral("maxTokens"))->setValue(5);
      dialog->findChild<QDoubleSpinBox*>(QStringLiteral("temperature"))->setValue(0.0);
      QVERIFY(dialog->findChild<QRadioButton*>(QStringLiteral("useOwnSampling"))->isChecked());
      accept(w, dialog);
      QVERIFY(w.chat(own)->ownSampling.has_value());
      QCOMPARE(w.chat(own)->ownSampling->maxTokens, 5);
      QCOMPARE(w.findChild<QToolButton*>(QStringLiteral("chatSampling"))->text(), QStringLiteral("Sampling: this chat's"));
      QVERIFY(w.findChild<QToolButton*>(QStringLiteral("chatSampling"))->toolTip().contains(QStringLiteral("up to 5 tokens")));

      pagedchat::test::sendAndWait(w, question);
      QCOMPARE(w.chat(own)->messages.last().metrics.numTokens, 5);
      QCOMPARE(w.chat(own)->messages.last().metrics.finishReason, QStringLiteral("length"));
      const QString greedy = w.chat(own)->messages.last().content;
      // Greedy (its temperature 0): regenerating gives the same reply.
      w.chatPanel()->regenerate();
      QSignalSpy done(&w, &MainWindow::turnDone);
      QVERIFY(done.wait(60000));
      QCOMPARE(w.chat(own)->messages.last().content, greedy);

      // Another chat keeps the app's defaults: its reply is not cut at 5 tokens.
      const ChatId other = w.newChat();
      QCOMPARE(w.findChild<QToolButton*>(QStringLiteral("chatSampling"))->text(), QStringLiteral("Sampling"));
      pagedchat::test::sendAndWait(w, question);
      QVERIFY(!w.chat(other)->ownSampling);
      QVERIFY2(w.chat(other)->messages.last().metrics.numTokens > 5, qPrintable(w.chat(other)->messages.last().content));

      // A fork keeps its parent's settings.
      fork = w.forkChat(own, 2);
      QVERIFY(w.chat(fork)->ownSampling.has_value());
      QCOMPARE(w.chat(fork)->ownSampling->maxTokens, 5);
    }
    // Saved with the chat: a restart has them; "the app's defaults" takes them back.
    AppServices services;
    MainWindow w(services);
    w.show();
    QVERIFY(w.chat(own)->ownSampling.has_value());
    QCOMPARE(w.chat(own)->ownSampling->maxTokens, 5);
    QCOMPARE(w.chat(own)->ownSampling->temperature, 0.0);
    QVERIFY(w.chat(fork)->ownSampling.has_value());
    pagedchat::test::loadAndWait(w, m_model);
    w.selectChat(own);
    ChatSamplingDialog* dialog = openDialog(w);
    QVERIFY(dialog->findChild<QRadioButton*>(QStringLiteral("useOwnSampling"))->isChecked());
    QCOMPARE(dialog->findChild<QSpinBox*>(QStringLiteral("maxTokens"))->value(), 5);
    dialog->findChild<QRadioButton*>(QStringLiteral("useAppSampling"))->setChecked(true);
    accept(w, dialog);
    QVERIFY(!w.chat(own)->ownSampling);
    pagedchat::test::sendAndWait(w, QStringLiteral("Go on with the story."));
    QVERIFY(w.chat(own)->messages.last().metrics.numTokens > 5);
  }
};

QTEST_MAIN(TestChatSampling)
#include "test_chat_sampling.moc"
