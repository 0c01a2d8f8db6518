// The context meter tells the truth at every moment: the chat's tokens as the model reads it
// next (counted here independently with the model's tokenizer) against the context, and the
// KV blocks the chat's sequences hold now (read from the pool frames' block tables) — at
// launch, after a turn, after Stop, after a compare pick, after an error, and after a restart.

#include <QtTest>

#include <QLabel>
#include <QPlainTextEdit>
#include <QRegularExpression>
#include <QSpinBox>

#include <set>

#include "engine/chat/chat_model.h"
#include "engine/model/model.h"
#include "support/test_env.h"
#include "support/window_driver.h"
#include "appcore/session/chat_controller.h"
#include "appcore/session/pool_control.h"
#include "ui/chat/chat_panel.h"
#include "ui/shell/main_window.h"

class TestContextMeter : public QObject {
  Q_OBJECT
  QString m_model;
  std::unique_ptr<pagedchat::Model> m_tokens;
  pagedchat::ChatModel m_chat;  // m_tokens with its own chat template

  int tokensOf(const ChatRecord& r) {
    std::vector<pagedchat::ChatMessage> chat;
    for (int i = r.firstInView; i < r.messages.size(); ++i)
      chat.push_back({r.messages[i].role.toStdString(), r.messages[i].content.toStdString()});
    return static_cast<int>(m_chat.encode_chat(chat, false).size());
  }
  // The blocks the chat's sequences hold, from the last pool frame.
  static int blocksIn(QSignalSpy& frames, const QString& title) {
    QTest::qWait(300);
    std::set<int32_t> blocks;
    for (const PoolFrameSequence& s : frames.last()[0].value<PoolFrame>().sequences)
      if (s.chatTitle == title) blocks.insert(s.blockTable.begin(), s.blockTable.end());
    return static_cast<int>(blocks.size());
  }
  // The meter shows what the controller measured; a chat past the context, flagged with what
  // its next turn does.
  void meterSays(MainWindow& w, ChatId id, int tokens, int blocks) {
    const QString next = w.chat(id)->lastError.sentence.isEmpty() ? QStringLiteral("the next turn drops the oldest turns")
                                                                   : QStringLiteral("its last turn failed (the chat says why)");
    const QString says = tokens > 2048 ? QStringLiteral("⚠ context %1 / 2048 tokens: more than the model reads; %2").arg(tokens).arg(next)
                                       : QStringLiteral("context %1 / 2048 tokens · %2 KV blocks held").arg(tokens).arg(blocks);
    QTRY_COMPARE_WITH_TIMEOUT(w.findChild<QLabel*>(QStringLiteral("contextUsed"))->text(), says, 10000);
    QCOMPARE(w.currentChat(), id);
  }

 private slots:
  void initTestCase() {
    pagedchat::test::useFreshDataFolder();
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    m_model = QString::fromStdString(model);
    m_tokens = pagedchat::Model::load(model);
    m_chat = pagedchat::ChatModel(*m_tokens, pagedchat::ChatModel::own_template(*m_tokens));
  }

  void theMeterFollowsEveryState() {
    ChatId id = -1;
    QString title;
    {
      AppServices services;
      MainWindow w(services);
      w.show();
      pagedchat::test::loadAndWait(w, m_model);
      id = w.newChat();
      QSignalSpy frames(&w.session().pool(), &PoolControl::localFrame);
      meterSays(w, id, tokensOf(*w.chat(id)), 0);  // at launch: the template's system prompt only

      pagedchat::test::sendAndWait(w, QStringLiteral("Name two planets."));
      title = w.chat(id)->title;
      meterSays(w, id, tokensOf(*w.chat(id)), blocksIn(frames, title));
      QVERIFY(blocksIn(frames, title) > 0);

      // Stop: the reply is kept, the sequence freed.
      QSignalSpy done(&w, &MainWindow::turnDone);
      connect(&w.session().pool(), &PoolControl::localFrame, &w, [&w] { w.chatPanel()->stop(); }, Qt::SingleShotConnection);
      pagedchat::test::sendAndWait(w, QStringLiteral("Now write a long story about both of them."));
      QCOMPARE(w.chat(id)->messages.last().metrics.finishReason, QStringLiteral("abort"));
      meterSays(w, id, tokensOf(*w.chat(id)), 0);

      // A compare pick: the picked sample's sequence is what the chat holds.
      w.findChild<QSpinBox*>(QStringLiteral("samples"))->setValue(2);
      pagedchat::test::sendAndWait(w, QStringLiteral("Say one word."));
      w.chatPanel()->pickSample(1);
      w.findChild<QSpinBox*>(QStringLiteral("samples"))->setValue(1);
      QTRY_VERIFY_WITH_TIMEOUT(blocksIn(frames, title) > 0, 10000);
      const int held = blocksIn(frames, title);
      meterSays(w, id, tokensOf(*w.chat(id)), held);

      // An error (a message too long to leave room for a reply): the chat as it now reads,
      // more than fits, and what it held before, still held.
      QString longText;
      while (m_tokens->tokenizer->encode(longText.toStdString(), false, false).size() < 1700) longText += QStringLiteral("river stone ");
      pagedchat::test::sendAndWait(w, longText);
      QCOMPARE(w.chat(id)->messages.last().role, QStringLiteral("user"));
      QVERIFY(!w.isReplying(id));
      meterSays(w, id, tokensOf(*w.chat(id)), held);
      QVERIFY(tokensOf(*w.chat(id)) > 1700);
    }
    // After a restart: the same conversation, nothing held yet.
    AppServices services;
    MainWindow w(services);
    w.show();
    pagedchat::test::loadAndWait(w, m_model);
    w.selectChat(id);
    meterSays(w, id, tokensOf(*w.chat(id)), 0);
  }

  // While typing, under the input: the message's tokens and the chat's with it (counted here
  // with the model's tokenizer and template), flagged when it is longer than the context.
  void theMessageBeingTypedIsCountedLive() {
    AppServices services;
    MainWindow w(services);
    w.show();
    pagedchat::test::loadAndWait(w, m_model);
    const ChatId id = w.newChat();
    pagedchat::test::sendAndWait(w, QStringLiteral("Name a colour."));
    auto* input = w.findChild<QPlainTextEdit*>(QStringLiteral("input"));
    auto* count = w.findChild<QLabel*>(QStringLiteral("draftTokens"));
    QVERIFY(count && count->text().isEmpty());
    const auto expected = [&](const QString& draft) {
      std::vector<pagedchat::ChatMessage> chat;
      for (const MessageRecord& m : w.chat(id)->messages) chat.push_back({m.role.toStdString(), m.content.toStdString()});
      const int before = static_cast<int>(m_chat.encode_chat(chat, false).size());
      chat.push_back({"user", draft.toStdString()});
      const int with = static_cast<int>(m_chat.encode_chat(chat, true).size());
      return std::pair{with - before, with};
    };
    const QString draft = QStringLiteral("And another one, please?");
    QTest::keyClicks(input, draft);
    const auto [own, with] = expected(draft);
    QTRY_COMPARE_WITH_TIMEOUT(count->text(), QStringLiteral("%1 tokens · %2 / 2,048 with it").arg(own).arg(with), 5000);
    QVERIFY(own > static_cast<int>(m_tokens->tokenizer->encode(draft.toStdString(), false, false).size()));  // its turn's markup too

    QString longText;
    while (m_tokens->tokenizer->encode(longText.toStdString(), false, false).size() < 2100) longText += QStringLiteral("river stone ");
    input->setPlainText(longText);
    QTRY_VERIFY_WITH_TIMEOUT(count->text().startsWith(QStringLiteral("⚠ ")), 5000);
    QVERIFY2(count->text().endsWith(QStringLiteral(": longer than the whole context")), qPrintable(count->text()));
    input->clear();
    QTRY_VERIFY_WITH_TIMEOUT(count->text().isEmpty(), 5000);
  }

  // The question is counted as soon as it is sent (here on a paused engine: nothing of the
  // reply yet), not when the reply has ended; a chat longer than the context (lowered under
  // it) is flagged with what its next turn will do.
  void theMeterCountsAtOnceAndFlagsAChatPastTheContext() {
    AppServices services;
    MainWindow w(services);
    w.show();
    pagedchat::test::loadAndWait(w, m_model);
    const ChatId id = w.newChat();
    auto* meter = w.findChild<QLabel*>(QStringLiteral("contextUsed"));
    w.session().pool().setPaused(true);
    QString question = QStringLiteral("Summarise this:");
    while (m_tokens->tokenizer->encode(question.toStdString(), false, false).size() < 160) question += QStringLiteral(" river stone");
    w.findChild<QPlainTextEdit*>(QStringLiteral("input"))->setPlainText(question);
    w.chatPanel()->send();
    QVERIFY(w.isReplying(id));
    meterSays(w, id, tokensOf(*w.chat(id)), 0);  // the question, and the reply's empty start
    QVERIFY(tokensOf(*w.chat(id)) > 160);
    // While it streams, the blocks its turn holds are counted (not 0 until it is parked):
    // stepped while paused, the reply is under way as long as the test needs.
    const auto blocksShown = [&] {
      const QRegularExpressionMatch m = QRegularExpression(QStringLiteral("· (\\d+) KV blocks held")).match(meter->text());
      return m.hasMatch() ? m.captured(1).toInt() : -1;
    };
    for (int i = 0; i < 3; ++i) w.session().pool().step();  // its prompt, then its first tokens
    QTRY_VERIFY_WITH_TIMEOUT(blocksShown() > 0, 10000);
    QVERIFY(w.isReplying(id));
    QSignalSpy done(&w, &MainWindow::turnDone);
    w.session().pool().setPaused(false);
    QVERIFY(done.wait(120000));

    AppSettings small = w.settings();
    small.maxContext = 128;
    QSignalSpy ready(&w, &MainWindow::modelReady);
    w.applySettings(small);  // the engine reloads with the smaller context
    QVERIFY(ready.wait(60000));
    QTRY_VERIFY_WITH_TIMEOUT(meter->text().startsWith(QStringLiteral("⚠ context ")), 10000);
    QVERIFY2(meter->text().contains(QStringLiteral(" / 128 tokens: more than the model reads; the next turn drops the oldest turns")),
             qPrintable(meter->text()));
  }
};

QTEST_MAIN(TestContextMeter)
#include "test_context_meter.moc"
