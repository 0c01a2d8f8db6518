// A chat's own sampling settings, as a user sets them from the chat (the Sampling button under
// the input): the next reply samples with them while another chat keeps the app's defaults;
// they are saved with the chat, shown on the button, inherited by a fork, and "the app's
// defaults" takes them back. And "Answer in JSON matching a schema": a schema outside what the
// engine enforces is said under it and cannot be saved; a good one makes every reply a document
// that validates, across a restart. On the real engine; chats in a temporary data dir.

#include <QtTest>

#include <QComboBox>
#include <QDialogButtonBox>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QPlainTextEdit>
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

  void aChatAnswersInJsonMatchingItsSchema() {
    const QString schema = QStringLiteral(R"({"type": "object", "properties": {"colour": {"enum": ["red", "green", "blue"]}, )"
                                          R"("reason": {"type": "string", "maxLength": 30}}, "required": ["colour", "reason"], "additionalProperties": false})");
    // The reply: an object with exactly these members, a colour of the three.
    auto valid = [](const QString& reply) {
      const QJsonDocument doc = QJsonDocument::fromJson(reply.toUtf8());
      const QJsonObject o = doc.object();
      return doc.isObject() && o.size() == 2 && QStringList{"red", "green", "blue"}.contains(o["colour"].toString()) &&
             o["reason"].isString() && o["reason"].toString().size() <= 30;
    };
    ChatId chat = -1;
    {
      AppServices services;
      MainWindow w(services);
      w.show();
      QVERIFY(QTest::qWaitForWindowExposed(&w));
      pagedchat::test::loadAndWait(w, m_model);
      chat = w.newChat();
      ChatSamplingDialog* dialog = openDialog(w);
      QVERIFY(dialog);
      auto* answer = dialog->findChild<QComboBox*>(QStringLiteral("answerFormat"));
      auto* edit = dialog->findChild<QPlainTextEdit*>(QStringLiteral("answerSchema"));
      auto* problem = dialog->findChild<QLabel*>(QStringLiteral("answerSchemaProblem"));
      QPushButton* ok = dialog->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok);
      QVERIFY(!edit->isVisible());
      answer->setCurrentIndex(2);
      QVERIFY(edit->isVisible());
      QVERIFY(!ok->isEnabled());  // no schema yet
      edit->setPlainText(QStringLiteral(R"({"type": "string", "pattern": "^a+$"})"));
      QTRY_VERIFY(problem->isVisible());
      QVERIFY2(problem->text().contains(QStringLiteral("'pattern'")), qPrintable(problem->text()));
      QVERIFY(!ok->isEnabled());
      edit->setPlainText(QStringLiteral("{not json"));
      QVERIFY(problem->text().contains(QStringLiteral("not JSON")));
      edit->setPlainText(schema);
      QVERIFY(!problem->isVisible());
      QVERIFY(ok->isEnabled());
      accept(w, dialog);
      QCOMPARE(w.chat(chat)->ownSampling->answerFormat, schema);
      QVERIFY(w.findChild<QToolButton*>(QStringLiteral("chatSampling"))->toolTip().contains(QStringLiteral("answers in JSON (schema)")));
      pagedchat::test::sendAndWait(w, QStringLiteral("What is your favourite colour?"));
      QVERIFY2(valid(w.chat(chat)->messages.last().content), qPrintable(w.chat(chat)->messages.last().content));
      QCOMPARE(w.chat(chat)->messages.last().metrics.finishReason, QStringLiteral("stop"));
    }
    // Saved with the chat: after a restart the next reply is held to it too.
    AppServices services;
    MainWindow w(services);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QCOMPARE(w.chat(chat)->ownSampling->answerFormat, schema);
    pagedchat::test::loadAndWait(w, m_model);
    w.selectChat(chat);
    pagedchat::test::sendAndWait(w, QStringLiteral("And your least favourite?"));
    QVERIFY2(valid(w.chat(chat)->messages.last().content), qPrintable(w.chat(chat)->messages.last().content));
  }
};

QTEST_MAIN(TestChatSampling)
#include "test_chat_sampling.moc"
