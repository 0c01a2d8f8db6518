// The response bodies: the field names and shapes OpenAI's clients read, whole and streamed,
// and the Prometheus text of /metrics.
#include <QtTest>

#include "engine/engine/engine.h"
#include "server/api/completion_json.h"
#include "server/api/metrics_text.h"

class TestCompletionJson : public QObject {
  Q_OBJECT

  static QJsonObject parse(const QByteArray& json) { return QJsonDocument::fromJson(json).object(); }

 private slots:
  void chatCompletion() {
    ResponseHead head{"chatcmpl-1", 1700000000, "m", true};
    QJsonObject o = parse(completionJson(head, {{"Hello", "stop", {}}, {"Hi", "length", {}}}, {30, 5, 16}));
    QCOMPARE(o["object"].toString(), QStringLiteral("chat.completion"));
    QCOMPARE(o["id"].toString(), QStringLiteral("chatcmpl-1"));
    QCOMPARE(o["model"].toString(), QStringLiteral("m"));
    const QJsonArray choices = o["choices"].toArray();
    QCOMPARE(choices.size(), 2);
    QCOMPARE(choices[1].toObject()["index"].toInt(), 1);
    QCOMPARE(choices[0].toObject()["message"].toObject()["role"].toString(), QStringLiteral("assistant"));
    QCOMPARE(choices[0].toObject()["message"].toObject()["content"].toString(), QStringLiteral("Hello"));
    QCOMPARE(choices[1].toObject()["finish_reason"].toString(), QStringLiteral("length"));
    const QJsonObject usage = o["usage"].toObject();
    QCOMPARE(usage["prompt_tokens"].toInt(), 30);
    QCOMPARE(usage["completion_tokens"].toInt(), 5);
    QCOMPARE(usage["total_tokens"].toInt(), 35);
    QCOMPARE(usage["prompt_tokens_details"].toObject()["cached_tokens"].toInt(), 16);
  }

  void textCompletion() {
    ResponseHead head{"cmpl-2", 1, "m", false};
    QJsonObject o = parse(completionJson(head, {{"upon a time", "length", {}}}, {3, 4, 0}));
    QCOMPARE(o["object"].toString(), QStringLiteral("text_completion"));
    QCOMPARE(o["choices"].toArray()[0].toObject()["text"].toString(), QStringLiteral("upon a time"));
  }

  void chunks() {
    ResponseHead head{"chatcmpl-3", 1, "m", true};
    QJsonObject first = parse(chunkJson(head, 2, QString(), true, QString()));
    QCOMPARE(first["object"].toString(), QStringLiteral("chat.completion.chunk"));
    QJsonObject c = first["choices"].toArray()[0].toObject();
    QCOMPARE(c["index"].toInt(), 2);
    QCOMPARE(c["delta"].toObject()["role"].toString(), QStringLiteral("assistant"));
    QVERIFY(c["finish_reason"].isNull());
    c = parse(chunkJson(head, 0, "tok", false, QString()))["choices"].toArray()[0].toObject();
    QCOMPARE(c["delta"].toObject()["content"].toString(), QStringLiteral("tok"));
    QVERIFY(!c["delta"].toObject().contains("role"));
    c = parse(chunkJson(head, 0, QString(), false, "stop"))["choices"].toArray()[0].toObject();
    QCOMPARE(c["finish_reason"].toString(), QStringLiteral("stop"));
    QVERIFY(c["delta"].toObject().isEmpty());
    QJsonObject last = parse(usageChunkJson(head, {7, 2, 0}));
    QVERIFY(last["choices"].toArray().isEmpty());
    QCOMPARE(last["usage"].toObject()["total_tokens"].toInt(), 9);
  }

  void logprobs() {
    std::vector<TokenLogprob> tokens{{"He", -0.5f, {{"He", -0.5f}, {"Hi", -1.5f}}}, {"llo", -0.25f, {}}};
    QJsonObject chat = tokenLogprobsJson(true, tokens, 0).toObject();
    QJsonArray content = chat["content"].toArray();
    QCOMPARE(content.size(), 2);
    QCOMPARE(content[0].toObject()["token"].toString(), QStringLiteral("He"));
    QCOMPARE(content[0].toObject()["logprob"].toDouble(), -0.5);
    QCOMPARE(content[0].toObject()["bytes"].toArray(), (QJsonArray{72, 101}));
    QCOMPARE(content[0].toObject()["top_logprobs"].toArray()[1].toObject()["token"].toString(), QStringLiteral("Hi"));
    QVERIFY(content[1].toObject()["top_logprobs"].toArray().isEmpty());
    QJsonObject text = tokenLogprobsJson(false, tokens, 4).toObject();
    QCOMPARE(text["tokens"].toArray(), (QJsonArray{"He", "llo"}));
    QCOMPARE(text["token_logprobs"].toArray()[1].toDouble(), -0.25);
    QCOMPARE(text["text_offset"].toArray(), (QJsonArray{4, 6}));
    QCOMPARE(text["top_logprobs"].toArray()[0].toObject()["Hi"].toDouble(), -1.5);
    // A chunk carries its token's logprobs; a plain one carries null.
    ResponseHead head{"c", 1, "m", true};
    QJsonObject c = parse(chunkJson(head, 0, "He", false, QString(), tokenLogprobsJson(true, {tokens[0]}, 0)))["choices"].toArray()[0].toObject();
    QCOMPARE(c["logprobs"].toObject()["content"].toArray().size(), 1);
    QVERIFY(parse(chunkJson(head, 0, "He", false, QString()))["choices"].toArray()[0].toObject()["logprobs"].isNull());
  }

  void models() {
    QJsonObject o = parse(modelsJson("SmolLM2", 5));
    QCOMPARE(o["object"].toString(), QStringLiteral("list"));
    QCOMPARE(o["data"].toArray()[0].toObject()["id"].toString(), QStringLiteral("SmolLM2"));
    QCOMPARE(o["data"].toArray()[0].toObject()["object"].toString(), QStringLiteral("model"));
  }

  void prometheus() {
    pagedchat::EngineStats s;
    s.kv.num_blocks = 10;
    s.kv.num_used_blocks = 3;
    s.kv.num_cached_blocks = 2;
    s.kv.num_free_blocks = 5;
    s.kv.prefix_hit_tokens = 48;
    s.num_preempted = 1;
    s.num_generated = 123456789012;
    ServerCounters server;
    server.numActive = 4;
    const QString text = QString::fromUtf8(prometheusText(s, server));
    for (const char* line : {"pagedchat_kv_blocks_used 3\n", "pagedchat_kv_blocks_cached 2\n", "pagedchat_kv_blocks_free 5\n",
                             "pagedchat_prefix_cache_hit_tokens_total 48\n", "pagedchat_preemptions_total 1\n",
                             "pagedchat_generation_tokens_total 123456789012\n", "pagedchat_http_requests_active 4\n",
                             "# TYPE pagedchat_kv_blocks_used gauge\n", "# TYPE pagedchat_preemptions_total counter\n"})
      QVERIFY2(text.contains(QLatin1String(line)), line);
  }
};

QTEST_APPLESS_MAIN(TestCompletionJson)
#include "test_completion_json.moc"
