// A chat's turns through the session alone (no widget linked), as the window's suites reach
// them through the window: a regenerated reply keeps the one it replaces as a version; a
// compare of three samples goes on with the one picked; a reply cut by its length is
// continued, the text growing from where it stopped; a chat too long for the context under
// "stop and ask" submits nothing and says how long it is; chats come back after a restart
// with their titles, pins and messages.

#include <QSignalSpy>
#include <QtTest>

#include "appcore/session/pool_control.h"
#include "support/session_driver.h"
#include "support/test_env.h"

using pagedchat::test::loadIntoSession;
using pagedchat::test::replyAndWait;

namespace {
TurnSettings greedy(const AppSession& session, int maxTokens, int samples = 1) {
  TurnSettings t = session.settings().sampling;
  t.temperature = 0;
  t.maxTokens = maxTokens;
  t.numSamples = samples;
  return t;
}

// The model loaded with a context of maxContext tokens a chat (saved in the settings first:
// with no model yet, nothing reloads).
bool loadWithContext(AppServices& services, const QString& model, int maxContext) {
  AppSettings small = services.session().settings();
  small.maxContext = maxContext;
  services.session().applySettings(small);
  return loadIntoSession(services, model);
}

bool waitForTurn(ChatController& chats, ChatId id) {
  return QTest::qWaitFor([&] { return !chats.chat(id)->replying; }, 120000);
}
}  // namespace

class TestSessionTurns : public QObject {
  Q_OBJECT
  QString m_model;

 private slots:
  void initTestCase() {
    pagedchat::test::useFreshSessionFolder();
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    m_model = QString::fromStdString(model);
  }

  void aRegeneratedReplyKeepsTheOneItReplaces() {
    AppServices services;
    QVERIFY(loadIntoSession(services, m_model));
    ChatController& chats = services.session().chats();
    const ChatId id = chats.create();
    QVERIFY(replyAndWait(services.session(), id, QStringLiteral("Name a fruit.")));
    const QString first = chats.chat(id)->record.messages[1].content;
    TurnSettings sampled = greedy(services.session(), 16);
    sampled.temperature = 1.0;
    sampled.seed = 5;
    QVERIFY(chats.regenerate(id, sampled, {}));
    QVERIFY(waitForTurn(chats, id));
    const ChatRecord& r = chats.chat(id)->record;
    QCOMPARE(r.messages.size(), 2);
    QCOMPARE(r.messages[1].numVersions(), 2);
    QCOMPARE(r.messages[1].versionIndex, 1);
    QVERIFY(chats.switchVersion(id, 1, -1));
    QCOMPARE(chats.chat(id)->record.messages[1].content, first);
    QCOMPARE(chats.chat(id)->record.messages[1].versionIndex, 0);
  }

  void aCompareGoesOnWithTheSamplePicked() {
    AppServices services;
    QVERIFY(loadIntoSession(services, m_model));
    ChatController& chats = services.session().chats();
    const ChatId id = chats.create();
    TurnSettings three = greedy(services.session(), 12, 3);
    three.temperature = 0.9;
    three.seed = 7;
    QVERIFY(chats.send(id, QStringLiteral("Give a name for a cat."), three, {}));
    QVERIFY(waitForTurn(chats, id));
    const ChatController::Chat* c = chats.chat(id);
    QVERIFY(c->awaitingPick);
    QCOMPARE(c->samples.size(), 3);
    const QString picked = c->samples[1];
    QVERIFY(chats.pick(id, 1));
    QVERIFY(!chats.chat(id)->awaitingPick);
    QCOMPARE(chats.chat(id)->record.messages.size(), 2);
    QCOMPARE(chats.chat(id)->record.messages[1].content, picked);
    // The next turn extends the picked sample's conversation.
    QVERIFY(replyAndWait(services.session(), id, QStringLiteral("And one for a dog?")));
    QCOMPARE(chats.chat(id)->record.messages[1].content, picked);
    QCOMPARE(chats.chat(id)->record.messages.size(), 4);
  }

  void aReplyCutByItsLengthIsContinued() {
    AppServices services;
    QVERIFY(loadIntoSession(services, m_model));
    ChatController& chats = services.session().chats();
    const ChatId id = chats.create();
    QVERIFY(chats.send(id, QStringLiteral("Tell me a long story about a lighthouse."), greedy(services.session(), 6), {}));
    QVERIFY(waitForTurn(chats, id));
    const MessageRecord cut = chats.chat(id)->record.messages[1];
    QCOMPARE(cut.metrics.finishReason, QStringLiteral("length"));
    QVERIFY(chats.continueReply(id, greedy(services.session(), 6)));
    QVERIFY(waitForTurn(chats, id));
    const MessageRecord more = chats.chat(id)->record.messages[1];
    QCOMPARE(chats.chat(id)->record.messages.size(), 2);  // the same reply, longer
    QVERIFY2(more.content.startsWith(cut.content) && more.content.size() > cut.content.size(), qPrintable(more.content));
  }

  void aChatTooLongForTheContextStopsAndAsks() {
    AppServices services;
    QVERIFY(loadWithContext(services, m_model, 320));
    ChatController& chats = services.session().chats();
    const ChatId id = chats.create();
    chats.setContextPolicy(id, ContextPolicy::stopAndAsk);
    QVERIFY(replyAndWait(services.session(), id, QStringLiteral("Hi!")));
    QString longer;
    for (int i = 0; i < 40; ++i) longer += QStringLiteral("The river runs past the mill and under the bridge. ");
    TurnSettings turn = greedy(services.session(), 16);
    turn.contextPolicy = ContextPolicy::dropOldest;  // the app's; the chat's own policy wins
    QVERIFY(chats.send(id, longer, turn, {}));
    QVERIFY(waitForTurn(chats, id));
    const ChatController::Chat* c = chats.chat(id);
    QVERIFY(c->contextFullTokens > 0);
    QCOMPARE(c->contextLength, 320);
    QCOMPARE(c->record.messages.last().role, QStringLiteral("user"));  // nothing was replied
    QString takenBack;
    QCOMPARE(chats.resolveContextFull(id, ChatController::ContextChoice::cancel, turn, {}, &takenBack), ChatId(-1));
    QCOMPARE(takenBack, longer);
    QCOMPARE(chats.chat(id)->record.messages.size(), 2);
  }

  // A reply that meets the end of the chat's context before its max tokens says so, not "cut
  // at its length limit" (the engine reports "length" for both).
  void aReplyStoppedByTheContextSaysSo() {
    AppServices services;
    QVERIFY(loadWithContext(services, m_model, 128));
    ChatController& chats = services.session().chats();
    const ChatId id = chats.create();
    QVERIFY(chats.send(id, QStringLiteral("Tell me a long story about a dragon who learns to read."), greedy(services.session(), 512), {}));
    QVERIFY(waitForTurn(chats, id));
    const MessageRecord& reply = chats.chat(id)->record.messages.last();
    QCOMPARE(reply.role, QStringLiteral("assistant"));
    QVERIFY(reply.metrics.numTokens < 512);
    QCOMPARE(reply.metrics.finishReason, ReplyMetrics::kContextEnd);
    QVERIFY2(reply.metrics.summary().contains(QStringLiteral("stopped at the end of the context")), qPrintable(reply.metrics.summary()));

    // Under its max tokens, "length" as before.
    const ChatId other = chats.create();
    QVERIFY(chats.send(other, QStringLiteral("Tell me a long story about a lighthouse."), greedy(services.session(), 8), {}));
    QVERIFY(waitForTurn(chats, other));
    QCOMPARE(chats.chat(other)->record.messages.last().metrics.finishReason, QStringLiteral("length"));
  }

  // A reply that failed leaves its note in the chat (the reason, its details) after a restart,
  // until the chat's next turn starts (issue 45, item 5).
  void aFailedRepliesNoteSurvivesARestart() {
    pagedchat::test::useFreshSessionFolder();
    ChatId id = -1;
    PlainError said;
    {
      AppServices services;
      QVERIFY(loadWithContext(services, m_model, 128));
      ChatController& chats = services.session().chats();
      id = chats.create();
      QString longer;
      for (int i = 0; i < 30; ++i) longer += QStringLiteral("The river runs past the mill. ");
      QVERIFY(chats.send(id, longer, greedy(services.session(), 16), {}));  // the app's policy drops turns: none to drop
      QVERIFY(waitForTurn(chats, id));
      said = chats.chat(id)->record.lastError;
      QVERIFY2(said.sentence.contains(QStringLiteral("there is no room for a reply")), qPrintable(said.sentence));
    }
    AppServices services;
    ChatController& chats = services.session().chats();
    QVERIFY(chats.restore().contains(id));
    QCOMPARE(chats.chat(id)->record.lastError.sentence, said.sentence);
    QCOMPARE(chats.chat(id)->record.lastError.detail, said.detail);
    QCOMPARE(chats.chat(id)->record.messages.last().role, QStringLiteral("user"));
  }

  void chatsComeBackAfterARestart() {
    ChatId id = -1;
    QVector<MessageRecord> messages;
    {
      AppServices services;
      QVERIFY(loadIntoSession(services, m_model));
      ChatController& chats = services.session().chats();
      id = chats.create();
      QVERIFY(replyAndWait(services.session(), id, QStringLiteral("What is 2+2?")));
      QVERIFY(chats.rename(id, QStringLiteral("  Sums\nand more ")));
      chats.setPinned(id, true);
      messages = chats.chat(id)->record.messages;
    }
    AppServices again;
    ChatController& chats = again.session().chats();
    const QVector<ChatId> restored = chats.restore();
    QVERIFY(restored.contains(id));
    const ChatRecord& r = chats.chat(id)->record;
    QCOMPARE(r.title, QStringLiteral("Sums and more"));
    QVERIFY(r.pinned);
    QCOMPARE(r.messages.size(), messages.size());
    for (int i = 0; i < messages.size(); ++i) {
      QCOMPARE(r.messages[i].role, messages[i].role);
      QCOMPARE(r.messages[i].content, messages[i].content);
    }
  }
};

QTEST_GUILESS_MAIN(TestSessionTurns)
#include "test_session_turns.moc"
