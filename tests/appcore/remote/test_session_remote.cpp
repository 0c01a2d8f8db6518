// A chat on a remote engine, through the session alone (no widget is linked): a pagedchat-server
// on loopback, its model chosen for the chat (with no model loaded here), the reply streamed
// in from the server and saved, Stop ending it there, and the chat's engine kept across a
// restart. What test_remote_chats reaches through the window, here reached as the window
// reaches it.

#include <QSignalSpy>
#include <QtTest>

#include "appcore/remote/remote_endpoints.h"
#include "support/remote_test_servers.h"
#include "support/session_driver.h"
#include "support/test_env.h"

using pagedchat::test::replyAndWait;

class TestSessionRemote : public QObject {
  Q_OBJECT
  QString m_model;

 private slots:
  void initTestCase() {
    pagedchat::test::useFreshSessionFolder();
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    PC_REQUIRE_ENV(server, "PAGEDCHAT_SERVER");
    m_model = QString::fromStdString(model);
  }

  void aChatRepliesFromARemoteServerAndKeepsItsEngine() {
    pagedchat::test::PagedchatServer server(m_model);
    QVERIFY(!server.url.empty());
    const QString url = QString::fromStdString(server.url);
    const RemoteEngineChoice engine{url, QStringLiteral("SmolLM2-135M-Instruct.Q4_1")};  // as its /v1/models lists it
    ChatId id = -1;
    {
      AppServices services;
      AppSession& session = services.session();
      QVERIFY(!session.hasModel());  // nothing loaded here: the server replies
      session.remoteEndpoints().set(url, {engine.model}, QString());
      ChatController& chats = session.chats();
      id = chats.create();
      QVERIFY(chats.setRemoteEngine(id, engine));
      QVERIFY(replyAndWait(session, id, QStringLiteral("Name a colour.")));
      const ChatRecord& r = chats.chat(id)->record;
      QCOMPARE(r.messages.size(), 2);
      QVERIFY(!r.messages[1].content.isEmpty());
      QVERIFY(r.lastError.sentence.isEmpty());

      // Stop while the server streams: the reply ends there, kept as far as it came.
      TurnSettings longer = session.settings().sampling;
      longer.temperature = 0;
      longer.maxTokens = 400;
      QSignalSpy ended(&chats, &ChatController::turnEnded);
      QVERIFY(chats.send(id, QStringLiteral("Tell me a long story about a lighthouse."), longer, {}));
      QVERIFY(QTest::qWaitFor([&] { return !chats.chat(id)->record.messages.last().content.isEmpty(); }, 60000));
      chats.stop(id);
      QVERIFY(ended.wait(30000));
      const MessageRecord& stopped = chats.chat(id)->record.messages.last();
      QCOMPARE(stopped.role, QStringLiteral("assistant"));
      QVERIFY(!stopped.content.isEmpty());
      QVERIFY2(stopped.metrics.numTokens < 400, qPrintable(QString::number(stopped.metrics.numTokens)));
      QVERIFY(!chats.chat(id)->replying);
    }
    AppServices again;
    ChatController& chats = again.session().chats();
    QVERIFY(chats.restore().contains(id));
    QCOMPARE(chats.chat(id)->record.remote, engine);  // where it runs is the chat's, saved
    QCOMPARE(chats.chat(id)->record.messages.size(), 4);
  }
};

QTEST_MAIN(TestSessionRemote)
#include "test_session_remote.moc"
