// A chat's export on its own (no model): the JSON reads back as the same chat (messages, their
// versions and metrics, its own system prompt, its context policy, the messages out of view);
// the Markdown holds the conversation as a person reads it; a file that is not an export, or
// is one damaged anywhere, is refused with a sentence or read as a valid chat, never a crash.

#include <QtTest>

#include <QJsonDocument>
#include <QJsonObject>
#include <QRandomGenerator>

#include "appcore/chat/chat_export.h"

namespace {

MessageRecord message(const QString& role, const QString& content) { return {.role = role, .content = content}; }

ChatRecord sampleChat() {
  ChatRecord c;
  c.id = 7;
  c.parentId = 3;
  c.forkedAtMessage = 2;
  c.title = QStringLiteral("Trip to Lyon");
  c.overridesSystemPrompt = true;
  c.systemPrompt = QStringLiteral("You are a travel agent.");
  c.contextPolicy = ContextPolicy::stopAndAsk;
  c.pinned = true;
  c.messages = {message(QStringLiteral("user"), QStringLiteral("Where should I eat?")),
                message(QStringLiteral("assistant"), QStringLiteral("Try a *bouchon*.\n\n```python\nprint('quenelle')\n```")),
                message(QStringLiteral("user"), QStringLiteral("And then?")),
                message(QStringLiteral("assistant"), QStringLiteral("A walk by the Saône."))};
  c.messages[1].metrics.numTokens = 12;
  c.messages[1].metrics.tokensPerSecond = 33.5;
  c.messages[1].metrics.secondsToFirstToken = 0.084;
  c.messages[1].metrics.finishReason = QStringLiteral("stop");
  // The last reply was regenerated once: the first version is kept.
  c.messages[3].otherVersions = {{message(QStringLiteral("assistant"), QStringLiteral("A museum."))}};
  c.messages[3].versionIndex = 1;
  c.firstInView = 1;
  return c;
}

bool sameMessages(const QVector<MessageRecord>& a, const QVector<MessageRecord>& b) {
  if (a.size() != b.size()) return false;
  for (int i = 0; i < a.size(); ++i) {
    const MessageRecord &x = a[i], &y = b[i];
    if (x.role != y.role || x.content != y.content || x.metrics.numTokens != y.metrics.numTokens ||
        x.metrics.finishReason != y.metrics.finishReason || qAbs(x.metrics.tokensPerSecond - y.metrics.tokensPerSecond) > 1e-9 ||
        qAbs(x.metrics.secondsToFirstToken - y.metrics.secondsToFirstToken) > 1e-9 || x.versionIndex != y.versionIndex ||
        x.otherVersions.size() != y.otherVersions.size() || x.toolCalls != y.toolCalls || x.toolCallId != y.toolCallId ||
        x.toolName != y.toolName)
      return false;
    for (int v = 0; v < x.otherVersions.size(); ++v)
      if (!sameMessages(x.otherVersions[v], y.otherVersions[v])) return false;
  }
  return true;
}

}  // namespace

class TestChatExport : public QObject {
  Q_OBJECT
 private slots:
  void jsonReadsBackAsTheSameChat() {
    const ChatRecord c = sampleChat();
    TurnSettings sampling;
    sampling.temperature = 0.3;
    sampling.seed = 18446744073709551615ull;  // past a double's integers: kept as a string
    const QByteArray json = chatToJson(c, QStringLiteral("shared prompt"), sampling);
    const QJsonObject o = QJsonDocument::fromJson(json).object();
    QCOMPARE(o.value(QStringLiteral("format")).toString(), QStringLiteral("pagedchat.chat"));
    QCOMPARE(o.value(QStringLiteral("sampling")).toObject().value(QStringLiteral("seed")).toString(),
             QStringLiteral("18446744073709551615"));
    QCOMPARE(o.value(QStringLiteral("sampling")).toObject().value(QStringLiteral("temperature")).toDouble(), 0.3);
    QString error;
    const std::optional<ChatRecord> back = chatFromJson(json, &error);
    QVERIFY2(back, qPrintable(error));
    QCOMPARE(back->title, c.title);
    QVERIFY(back->overridesSystemPrompt);
    QCOMPARE(back->systemPrompt, c.systemPrompt);
    QCOMPARE(back->contextPolicy, ContextPolicy::stopAndAsk);
    QCOMPARE(back->firstInView, 1);
    QVERIFY(sameMessages(back->messages, c.messages));
    // An import is a chat of its own: no id, parent or pin comes with it.
    QCOMPARE(back->id, ChatId{-1});
    QCOMPARE(back->parentId, ChatId{-1});
    QVERIFY(!back->pinned);
  }

  // A reply's tool calls and the tool messages that answer them go out and come back, and the
  // engine reads them as OpenAI's messages carry them (tool_calls; tool_call_id and name).
  void toolCallsAndResultsRoundTrip() {
    ChatRecord c;
    c.title = QStringLiteral("tools");
    c.messages = {message(QStringLiteral("user"), QStringLiteral("What does notes.txt say?")),
                  {.role = QStringLiteral("assistant"),
                   .content = QString(),
                   .toolCalls = {{QStringLiteral("call_1"), QStringLiteral("read_file"), QStringLiteral(R"({"path": "notes.txt"})")}}},
                  {.role = QStringLiteral("tool"),
                   .content = QStringLiteral("buy milk"),
                   .toolCallId = QStringLiteral("call_1"),
                   .toolName = QStringLiteral("read_file")},
                  message(QStringLiteral("assistant"), QStringLiteral("It says: buy milk."))};
    QString error;
    const std::optional<ChatRecord> back = chatFromJson(chatToJson(c, QString(), TurnSettings{}), &error);
    QVERIFY2(back, qPrintable(error));
    QVERIFY(sameMessages(back->messages, c.messages));
    const std::vector<pagedchat::ChatMessage> engine = toEngineMessages(back->engineMessages(QString()));
    QCOMPARE(engine.size(), size_t{4});
    QCOMPARE(engine[1].tool_calls.size(), size_t{1});
    QCOMPARE(engine[1].tool_calls[0].id, std::string("call_1"));
    QCOMPARE(engine[1].tool_calls[0].name, std::string("read_file"));
    QCOMPARE(engine[1].tool_calls[0].arguments, std::string(R"({"path": "notes.txt"})"));
    QCOMPARE(engine[2].role, std::string("tool"));
    QCOMPARE(engine[2].tool_call_id, std::string("call_1"));
    QCOMPARE(engine[2].name, std::string("read_file"));
    QCOMPARE(engine[2].content, std::string("buy milk"));
  }

  // A chat's own sampling goes out and comes back as its own; a chat without writes the app's
  // settings it was exported under, and imports using the importing app's.
  void theChatsOwnSamplingRoundTrips() {
    ChatRecord c = sampleChat();
    TurnSettings own;
    own.temperature = 0.0;
    own.topK = 7;
    own.presencePenalty = 0.5;
    own.frequencyPenalty = -0.25;
    own.maxTokens = 99;
    own.seed = 42;
    c.ownSampling = own;
    const QByteArray json = chatToJson(c, QString(), TurnSettings{});
    QVERIFY(QJsonDocument::fromJson(json).object().value(QStringLiteral("own_sampling")).toBool());
    QString error;
    const std::optional<ChatRecord> back = chatFromJson(json, &error);
    QVERIFY2(back, qPrintable(error));
    QVERIFY(back->ownSampling.has_value());
    QVERIFY(sameSampling(*back->ownSampling, own));

    c.ownSampling.reset();
    TurnSettings app;
    app.maxTokens = 77;
    const QJsonObject o = QJsonDocument::fromJson(chatToJson(c, QString(), app)).object();
    QVERIFY(!o.value(QStringLiteral("own_sampling")).toBool());
    QCOMPARE(o.value(QStringLiteral("sampling")).toObject().value(QStringLiteral("max_tokens")).toInt(), 77);
    const std::optional<ChatRecord> none = chatFromJson(QJsonDocument(o).toJson(), &error);
    QVERIFY(none && !none->ownSampling);

    // Values outside what the settings allow are refused with the key named.
    QJsonObject bad = QJsonDocument::fromJson(json).object();
    QJsonObject sampling = bad.value(QStringLiteral("sampling")).toObject();
    sampling[QStringLiteral("top_p")] = 3.0;
    bad[QStringLiteral("sampling")] = sampling;
    QVERIFY(!chatFromJson(QJsonDocument(bad).toJson(), &error));
    QVERIFY2(error.contains(QStringLiteral("\"top_p\" must be a number from 0 to 1")), qPrintable(error));
    sampling[QStringLiteral("top_p")] = 0.5;
    sampling[QStringLiteral("seed")] = 12;  // a number, not a string
    bad[QStringLiteral("sampling")] = sampling;
    QVERIFY(!chatFromJson(QJsonDocument(bad).toJson(), &error));
    QVERIFY2(error.contains(QStringLiteral("\"seed\"")), qPrintable(error));
  }

  // A chat that read the shared prompt exports the prompt it read, and imports reading the
  // importing app's own shared prompt.
  void theSharedPromptIsWrittenButNotTakenOver() {
    ChatRecord c = sampleChat();
    c.overridesSystemPrompt = false;
    const QByteArray json = chatToJson(c, QStringLiteral("Be brief."), TurnSettings{});
    QCOMPARE(QJsonDocument::fromJson(json).object().value(QStringLiteral("system_prompt")).toString(), QStringLiteral("Be brief."));
    const std::optional<ChatRecord> back = chatFromJson(json, nullptr);
    QVERIFY(back);
    QVERIFY(!back->overridesSystemPrompt);
    QVERIFY(back->systemPrompt.isEmpty());
  }

  void markdownReadsAsTheConversation() {
    const QString md = chatToMarkdown(sampleChat(), QString());
    QVERIFY2(md.startsWith(QStringLiteral("# Trip to Lyon\n\n**System**\n\nYou are a travel agent.\n\n")), qPrintable(md));
    QVERIFY2(md.contains(QStringLiteral("**You · outside the model's view**\n\nWhere should I eat?\n\n")), qPrintable(md));
    QVERIFY2(md.contains(QStringLiteral("**Assistant**\n\nTry a *bouchon*.\n\n```python\nprint('quenelle')\n```\n\n")), qPrintable(md));
    QVERIFY2(md.contains(QStringLiteral("<sub>12 tokens · 33.5 tok/s · first token 84 ms</sub>")), qPrintable(md));
    QVERIFY2(md.contains(QStringLiteral("**Assistant (version 2 / 2)**\n\nA walk by the Saône.")), qPrintable(md));
  }

  void whatIsNotAnExportIsRefusedWithASentence() {
    const struct {
      const char* json;
      const char* says;
    } cases[] = {
        {"", "not JSON"},
        {"{\"format\": \"pagedchat.chat\", \"version\": 1, \"messages\": [", "not JSON"},
        {"[1, 2]", "not a PagedChat chat export"},
        {"{\"format\": \"other\"}", "not a PagedChat chat export"},
        {"{\"format\": \"pagedchat.chat\", \"version\": 2, \"messages\": []}", "version 2"},
        {"{\"format\": \"pagedchat.chat\", \"version\": 1}", "no \"messages\" array"},
        {"{\"format\": \"pagedchat.chat\", \"version\": 1, \"messages\": [{\"role\": \"system\", \"content\": \"x\"}]}",
         "message 1 has the role \"system\""},
        {"{\"format\": \"pagedchat.chat\", \"version\": 1, \"messages\": [{\"role\": \"user\", \"content\": 5}]}",
         "message 1 has no text"},
        {"{\"format\": \"pagedchat.chat\", \"version\": 1, \"messages\": [], \"context_policy\": \"sometimes\"}",
         "unknown context policy"},
    };
    for (const auto& c : cases) {
      QString error;
      QVERIFY2(!chatFromJson(QByteArray(c.json), &error), c.json);
      QVERIFY2(error.contains(QLatin1String(c.says)), qPrintable(QStringLiteral("%1 -> %2").arg(QLatin1String(c.json), error)));
    }
    QString error;
    QVERIFY(!chatFromJson(QByteArray(kMaxChatImportBytes + 1, ' '), &error));
    QVERIFY(error.contains(QStringLiteral("64 MiB")));
  }

  // Every damaged copy of an export (bytes flipped, cut short, chunks dropped) is refused with a
  // sentence or reads as a chat whose messages are all of a chat's roles; never a crash.
  void damagedExportsAreRefusedOrRead() {
    const QByteArray json = chatToJson(sampleChat(), QString(), TurnSettings{});
    QRandomGenerator rng(20261202);
    int refused = 0, read = 0;
    for (int i = 0; i < 3000; ++i) {
      QByteArray bad = json;
      switch (i % 3) {
        case 0:
          for (int k = 0; k < 1 + i % 5; ++k) bad[rng.bounded(bad.size())] = static_cast<char>(rng.bounded(256));
          break;
        case 1: bad.truncate(rng.bounded(bad.size())); break;
        case 2: bad.remove(rng.bounded(bad.size()), 1 + rng.bounded(40)); break;
      }
      QString error;
      const std::optional<ChatRecord> chat = chatFromJson(bad, &error);
      if (!chat) {
        QVERIFY(!error.isEmpty());
        ++refused;
        continue;
      }
      ++read;
      QVERIFY(chat->firstInView >= 0 && chat->firstInView <= chat->messages.size());
      for (const MessageRecord& m : chat->messages) {
        QVERIFY(m.role == QLatin1String("user") || m.role == QLatin1String("assistant"));
        QVERIFY(m.versionIndex >= 0 && m.versionIndex <= m.otherVersions.size());
      }
    }
    qInfo("damaged exports: %d refused, %d read", refused, read);
    QVERIFY(refused > 0 && read > 0);
  }
};

QTEST_APPLESS_MAIN(TestChatExport)
#include "test_chat_export.moc"
