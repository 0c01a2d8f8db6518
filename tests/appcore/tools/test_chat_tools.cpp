// A chat's turn with tools, through the session alone (no widget): the default model, the `mcp`
// Python SDK's test server (tests/mcp/servers/tool_server.py) in mcp.json, and the chat's
// turns offering its tools. A call forced by the turn (the "use tool" action) waits for the
// user's consent; allowed, it runs and its result is the next message, exactly what the server
// returns for those arguments; the turn goes on with a reply that reads it. Denied, the model is
// told so. "Always allow" runs the next call without asking, and is kept. Stop cancels a call
// that never answers. The tool messages come back after a restart. A chat without servers offers
// nothing and its replies are as before.

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QtTest>

#include <cstdlib>

#include "appcore/bridge/engine_bridge.h"
#include "appcore/tools/mcp_connection.h"
#include "appcore/tools/mcp_servers.h"
#include "appcore/remote/remote_endpoints.h"
#include "support/remote_test_servers.h"
#include "support/session_driver.h"
#include "support/mcp_app_config.h"
#include "support/test_env.h"

using pagedchat::test::loadIntoSession;

namespace {

using pagedchat::test::writeNotes;
QString env(const char* name) { return pagedchat::test::envText(name); }

TurnSettings greedy(const AppSession& session, const QString& tool = {}) {
  TurnSettings t = session.settings().sampling;
  t.temperature = 0;
  t.maxTokens = 96;
  t.toolChoice = tool;
  return t;
}

bool waitUntil(const std::function<bool()>& done, int ms = 120000) { return QTest::qWaitFor(done, ms); }

const ChatController::Chat& chatOf(ChatController& chats, ChatId id) { return *chats.chat(id); }

// What the test server's read_file answers for these arguments: the file's text, or an error.
QString expectedReadFile(const QString& arguments) {
  const QString path = QJsonDocument::fromJson(arguments.toUtf8()).object().value("path").toString();
  QFile f(path);
  if (!path.isEmpty() && f.open(QIODevice::ReadOnly)) return QString::fromUtf8(f.readAll());
  return {};
}

}  // namespace

class TestChatTools : public QObject {
  Q_OBJECT
  QString m_model;
  QString m_notes;  // a file the model is asked to read

 private slots:
  void initTestCase() {
    pagedchat::test::useFreshSessionFolder();
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    m_model = QString::fromStdString(model);
    if (env("PAGEDCHAT_PYTHON").isEmpty()) QSKIP("PAGEDCHAT_PYTHON (the venv with the mcp SDK) is not set");
    pagedchat::test::writeMcpConfigWithTestServer();
    m_notes = writeNotes("The secret word is marmalade.\n");
  }

  void anAllowedCallRunsAndTheReplyGoesOn() {
    ChatId id = -1;
    QVector<MessageRecord> before;
    {
      AppServices services;
      QVERIFY(loadIntoSession(services, m_model));
      McpConnection* files = services.tools().connection("files");
      QVERIFY(files);
      QTRY_COMPARE_WITH_TIMEOUT(files->state(), McpConnection::State::Ready, 30000);
      ChatController& chats = services.session().chats();
      // The pool frames' notes: a tool result appended to the chat's sequence, named with its blocks.
      QStringList notes;
      QObject::connect(services.bridge(), &EngineBridge::poolFrame, &chats, [&](const PoolFrame& f) {
        for (const KvEventLine& n : f.notes)
          if (!n.blocks.empty()) notes << n.text;
      });
      id = chats.create();
      QVERIFY(chats.setChatTools(id, {.servers = {"files"}, .maxCallsPerTurn = 3}));
      QVERIFY(chats.send(id, QStringLiteral("Read the file %1 and tell me the secret word.").arg(m_notes),
                         greedy(services.session(), "read_file"), {}));
      // The forced call waits for consent; nothing ran.
      QVERIFY(waitUntil([&] { return chatOf(chats, id).toolCall.has_value() || !chatOf(chats, id).replying; }));
      const ChatController::Chat& c = chatOf(chats, id);
      QVERIFY(c.replying);
      QVERIFY(c.toolCall && !c.toolCall->running);
      const MessageRecord call = c.record.messages.last();
      QCOMPARE(call.role, QStringLiteral("assistant"));
      QVERIFY(!call.toolCalls.isEmpty());
      QCOMPARE(call.toolCalls[0].name, QStringLiteral("read_file"));
      QCOMPARE(call.metrics.finishReason, ReplyMetrics::kToolCalls);
      const QJsonDocument args = QJsonDocument::fromJson(call.toolCalls[0].arguments.toUtf8());
      QVERIFY2(args.isObject() && args.object().value("path").isString(), qPrintable(call.toolCalls[0].arguments));
      QCOMPARE(c.toolCall->callId, call.toolCalls[0].id);
      QCOMPARE(c.toolCall->server, QStringLiteral("files"));
      QCOMPARE(c.toolCall->tool, QStringLiteral("read_file"));

      QVERIFY(chats.answerToolCall(id, call.toolCalls[0].id, ChatController::ToolConsent::allowOnce));
      QVERIFY(!chats.answerToolCall(id, call.toolCalls[0].id, ChatController::ToolConsent::deny));  // answered already
      // The result is the next message; the turn goes on. Any further call is denied.
      QVERIFY(waitUntil([&] {
        const ChatController::Chat& now = chatOf(chats, id);
        if (now.toolCall && !now.toolCall->running) chats.answerToolCall(id, now.toolCall->callId, ChatController::ToolConsent::deny);
        return !now.replying;
      }));
      const QVector<MessageRecord>& m = chatOf(chats, id).record.messages;
      const int at = static_cast<int>(std::find_if(m.begin(), m.end(), [&](const MessageRecord& r) { return r.toolCalls == call.toolCalls; }) - m.begin());
      QVERIFY(at >= 0 && at + 1 < m.size());
      const MessageRecord& result = m[at + 1];
      QCOMPARE(result.role, QStringLiteral("tool"));
      QCOMPARE(result.toolCallId, call.toolCalls[0].id);
      QCOMPARE(result.toolName, QStringLiteral("read_file"));
      const QString expected = expectedReadFile(call.toolCalls[0].arguments);
      if (!expected.isEmpty()) QCOMPARE(result.content, expected);
      else QVERIFY2(result.content.startsWith("Error: "), qPrintable(result.content));
      // Every call has its answer, and the turn ended with a reply (or at its limit, said).
      for (int i = 0; i < m.size(); ++i)
        for (const ToolCallRecord& made : m[i].toolCalls)
          QVERIFY(std::any_of(m.begin() + i, m.end(), [&](const MessageRecord& r) { return r.toolCallId == made.id; }));
      QVERIFY(m.last().role == QLatin1String("assistant") || !chatOf(chats, id).record.lastError.sentence.isEmpty());
      if (m.last().role == QLatin1String("assistant") && m.last().toolCalls.isEmpty())
        QVERIFY(!m.last().content.trimmed().isEmpty());
      QVERIFY(!services.tools().alwaysAllowed("files", "read_file"));  // allowed once only
      QTRY_VERIFY2(!notes.isEmpty(), "no pool note for the tool result");
      QVERIFY2(notes.first().startsWith(": tool result of read_file, ") && notes.first().contains(" appended in block"), qPrintable(notes.first()));
      before = m;
    }
    // After a restart: the calls and their results, as they were.
    AppServices again;
    ChatController& chats = again.session().chats();
    QVERIFY(chats.restore().contains(id));
    const QVector<MessageRecord>& after = chatOf(chats, id).record.messages;
    QCOMPARE(after.size(), before.size());
    for (int i = 0; i < after.size(); ++i) {
      QCOMPARE(after[i].role, before[i].role);
      QCOMPARE(after[i].content, before[i].content);
      QCOMPARE(after[i].toolCalls, before[i].toolCalls);
      QCOMPARE(after[i].toolCallId, before[i].toolCallId);
    }
    QCOMPARE(chatOf(chats, id).record.tools.servers, QStringList{"files"});
  }

  void aDeniedCallTellsTheModelSo() {
    AppServices services;
    QVERIFY(loadIntoSession(services, m_model));
    QTRY_COMPARE_WITH_TIMEOUT(services.tools().connection("files")->state(), McpConnection::State::Ready, 30000);
    ChatController& chats = services.session().chats();
    const ChatId id = chats.create();
    QVERIFY(chats.setChatTools(id, {.servers = {"files"}, .maxCallsPerTurn = 2}));
    QVERIFY(chats.send(id, QStringLiteral("Add 2 and 3."), greedy(services.session(), "add"), {}));
    QVERIFY(waitUntil([&] { return chatOf(chats, id).toolCall.has_value() || !chatOf(chats, id).replying; }));
    const QString callId = chatOf(chats, id).toolCall->callId;
    QVERIFY(chats.answerToolCall(id, callId, ChatController::ToolConsent::deny));
    QVERIFY(waitUntil([&] {
      const ChatController::Chat& now = chatOf(chats, id);
      if (now.toolCall && !now.toolCall->running) chats.answerToolCall(id, now.toolCall->callId, ChatController::ToolConsent::deny);
      return !now.replying;
    }));
    const QVector<MessageRecord>& m = chatOf(chats, id).record.messages;
    const auto answer = std::find_if(m.begin(), m.end(), [&](const MessageRecord& r) { return r.toolCallId == callId; });
    QVERIFY(answer != m.end());
    QCOMPARE(answer->content, QStringLiteral("The user denied this call: it did not run."));
  }

  void alwaysAllowRunsWithoutAskingAndIsKept() {
    {
      AppServices services;
      QVERIFY(loadIntoSession(services, m_model));
      QTRY_COMPARE_WITH_TIMEOUT(services.tools().connection("files")->state(), McpConnection::State::Ready, 30000);
      ChatController& chats = services.session().chats();
      const ChatId id = chats.create();
      QVERIFY(chats.setChatTools(id, {.servers = {"files"}, .maxCallsPerTurn = 1}));
      QVERIFY(chats.send(id, QStringLiteral("Add 2 and 3."), greedy(services.session(), "add"), {}));
      QVERIFY(waitUntil([&] { return chatOf(chats, id).toolCall.has_value() || !chatOf(chats, id).replying; }));
      QVERIFY(chats.answerToolCall(id, chatOf(chats, id).toolCall->callId, ChatController::ToolConsent::alwaysAllow));
      QVERIFY(waitUntil([&] { return !chatOf(chats, id).replying; }));
      QVERIFY(services.tools().alwaysAllowed("files", "add"));
      // The next forced call of it runs at once: no wait for consent at any point.
      QVERIFY(chats.send(id, QStringLiteral("Add 4 and 5."), greedy(services.session(), "add"), {}));
      bool asked = false;
      QVERIFY(waitUntil([&] {
        const ChatController::Chat& now = chatOf(chats, id);
        asked = asked || (now.toolCall && !now.toolCall->running);
        return !now.replying;
      }));
      QVERIFY(!asked);
      const MessageRecord& last = chatOf(chats, id).record.messages.last();
      // Limit 1: the call ran, and the turn went on to a reply or stopped at its limit, said.
      QVERIFY(last.role == QLatin1String("assistant") || chatOf(chats, id).record.lastError.sentence.contains("limit"));
      // The forced call (the reply after the question) ran: its answer is the server's sum for
      // the arguments the model wrote.
      const auto& m = chatOf(chats, id).record.messages;
      const auto question = std::find_if(m.rbegin(), m.rend(), [](const MessageRecord& r) { return r.role == QLatin1String("user"); });
      const MessageRecord& call = *(question.base());
      QCOMPARE(call.toolCalls.size(), 1);
      const auto result = std::find_if(m.begin(), m.end(), [&](const MessageRecord& r) { return r.toolCallId == call.toolCalls[0].id; });
      QVERIFY(result != m.end());
      const QJsonObject args = QJsonDocument::fromJson(call.toolCalls[0].arguments.toUtf8()).object();
      QCOMPARE(result->content, QString::number(args.value("a").toInteger() + args.value("b").toInteger()));
    }
    McpServers again;  // the consent file, read anew
    QVERIFY(again.alwaysAllowed("files", "add"));
    QVERIFY(!again.alwaysAllowed("files", "read_file"));
  }

  void stopCancelsACallThatNeverAnswers() {
    AppServices services;
    QVERIFY(loadIntoSession(services, m_model));
    QTRY_COMPARE_WITH_TIMEOUT(services.tools().connection("files")->state(), McpConnection::State::Ready, 30000);
    ChatController& chats = services.session().chats();
    const ChatId id = chats.create();
    QVERIFY(chats.setChatTools(id, {.servers = {"files"}}));
    QVERIFY(chats.send(id, QStringLiteral("Wait."), greedy(services.session(), "hang"), {}));
    QVERIFY(waitUntil([&] { return chatOf(chats, id).toolCall.has_value() || !chatOf(chats, id).replying; }));
    QVERIFY2(chatOf(chats, id).toolCall.has_value(),
             qPrintable("no call to answer; the reply: " + chatOf(chats, id).record.messages.last().content + " / " +
                        chatOf(chats, id).record.lastError.sentence + " / " + chatOf(chats, id).record.lastError.detail));
    QVERIFY(chats.answerToolCall(id, chatOf(chats, id).toolCall->callId, ChatController::ToolConsent::allowOnce));
    QVERIFY(chatOf(chats, id).toolCall->running);
    QTest::qWait(300);
    QVERIFY(chatOf(chats, id).replying);  // it hangs
    chats.stop(id);
    QVERIFY(waitUntil([&] { return !chatOf(chats, id).replying; }, 20000));
    const MessageRecord& result = chatOf(chats, id).record.messages.last();
    QCOMPARE(result.role, QStringLiteral("tool"));
    QVERIFY2(result.content.startsWith("Error: ") && result.content.contains("stopped"), qPrintable(result.content));
  }

  // A chat on a remote engine (a pagedchat-server on loopback): the tools go with the request,
  // the server's reply carries the call, and the call runs here after consent; its result goes
  // back to the server in the next request, which answers.
  void aRemoteChatSendsToolsAndRunsTheCallsHere() {
    if (env("PAGEDCHAT_SERVER").isEmpty()) QSKIP("PAGEDCHAT_SERVER is not set (built without the server)");
    pagedchat::test::PagedchatServer server(m_model);
    QVERIFY(!server.url.empty());
    const QString url = QString::fromStdString(server.url);
    const RemoteEngineChoice engine{url, QStringLiteral("SmolLM2-135M-Instruct.Q4_1")};
    AppServices services;
    QTRY_COMPARE_WITH_TIMEOUT(services.tools().connection("files")->state(), McpConnection::State::Ready, 30000);
    services.session().remoteEndpoints().set(url, {engine.model}, QString());
    services.tools().setAlwaysAllowed("files", "add", false);  // an earlier test's Always allow: this call asks
    ChatController& chats = services.session().chats();
    const ChatId id = chats.create();
    QVERIFY(chats.setRemoteEngine(id, engine));
    QVERIFY(chats.setChatTools(id, {.servers = {"files"}, .maxCallsPerTurn = 2}));
    QVERIFY(chats.send(id, QStringLiteral("Add 2 and 3."), greedy(services.session(), "add"), {}));
    QVERIFY(waitUntil([&] { return chatOf(chats, id).toolCall.has_value() || !chatOf(chats, id).replying; }));
    QVERIFY2(chatOf(chats, id).toolCall.has_value(), qPrintable(chatOf(chats, id).record.lastError.sentence));
    const MessageRecord call = chatOf(chats, id).record.messages.last();
    QCOMPARE(call.toolCalls.size(), 1);
    QCOMPARE(call.toolCalls[0].name, QStringLiteral("add"));
    QVERIFY(call.toolCalls[0].id.startsWith(QStringLiteral("call_")));  // the server's id
    QCOMPARE(call.metrics.finishReason, QStringLiteral("tool_calls"));
    QVERIFY(chats.answerToolCall(id, call.toolCalls[0].id, ChatController::ToolConsent::allowOnce));
    QVERIFY(waitUntil([&] {
      const ChatController::Chat& now = chatOf(chats, id);
      if (now.toolCall && !now.toolCall->running) chats.answerToolCall(id, now.toolCall->callId, ChatController::ToolConsent::deny);
      return !now.replying;
    }));
    const QVector<MessageRecord>& m = chatOf(chats, id).record.messages;
    const auto result = std::find_if(m.begin(), m.end(), [&](const MessageRecord& r) { return r.toolCallId == call.toolCalls[0].id; });
    QVERIFY(result != m.end());
    const QJsonObject args = QJsonDocument::fromJson(call.toolCalls[0].arguments.toUtf8()).object();
    QCOMPARE(result->content, QString::number(args.value("a").toInteger() + args.value("b").toInteger()));
    // The server read the result and answered (or called again, within the limit).
    QVERIFY(result + 1 != m.end());
    QVERIFY2(chatOf(chats, id).record.lastError.sentence.isEmpty() || chatOf(chats, id).record.lastError.sentence.contains("limit"),
             qPrintable(chatOf(chats, id).record.lastError.sentence));
  }

  void aChatWithoutServersOffersNothing() {
    AppServices services;
    QVERIFY(loadIntoSession(services, m_model));
    ChatController& chats = services.session().chats();
    const ChatId plain = chats.create();
    QVERIFY(chats.send(plain, QStringLiteral("Add 2 and 3."), greedy(services.session(), "add"), {}));
    QVERIFY(waitUntil([&] { return !chatOf(chats, plain).replying; }));
    const MessageRecord& reply = chatOf(chats, plain).record.messages.last();
    QCOMPARE(reply.role, QStringLiteral("assistant"));
    QVERIFY(reply.toolCalls.isEmpty());
    QVERIFY(!reply.content.trimmed().startsWith("{"));  // free text, no JSON envelope
  }
};

QTEST_GUILESS_MAIN(TestChatTools)
#include "test_chat_tools.moc"
