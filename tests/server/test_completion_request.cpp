// Request bodies of the OpenAI API: what is accepted, what it becomes, and that every bad
// type or value is refused with status 400 naming the parameter (never reaching the engine).
#include <QtTest>

#include "server/api/api_error.h"
#include "server/api/completion_request.h"

class TestCompletionRequest : public QObject {
  Q_OBJECT

  static CompletionLimits limits() { return CompletionLimits{}; }

  // The error a chat body gets; fails the test when the body is accepted.
  static ApiError chatError(const QByteArray& body) {
    try {
      parseChatCompletion(body, limits());
    } catch (const ApiError& e) {
      return e;
    }
    qFatal("accepted: %s", body.constData());
  }

 private slots:
  void chatDefaultsAndFields() {
    CompletionRequest r = parseChatCompletion(
        R"({"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}],
            "temperature":0,"top_p":0.5,"max_tokens":7,"stop":"\n","seed":42,"n":3,
            "presence_penalty":0.5,"frequency_penalty":-1,"stream":true,"stream_options":{"include_usage":true},
            "user":"ignored","logprobs":false})",
        limits());
    QCOMPARE(r.model, QStringLiteral("m"));
    QCOMPARE(r.messages.size(), size_t(2));
    QCOMPARE(r.messages[0].role, std::string("system"));
    QCOMPARE(r.messages[1].content, std::string("Hi"));
    QCOMPARE(r.params.temperature, 0.0f);
    QCOMPARE(r.params.top_p, 0.5f);
    QCOMPARE(r.params.max_tokens, 7);
    QCOMPARE(r.params.stop, std::vector<std::string>{"\n"});
    QCOMPARE(r.params.seed, uint64_t(42));
    QVERIFY(r.hasSeed);
    QCOMPARE(r.n, 3);
    QCOMPARE(r.params.presence_penalty, 0.5f);
    QCOMPARE(r.params.frequency_penalty, -1.0f);
    QVERIFY(r.stream);
    QVERIFY(r.includeUsage);
    QVERIFY(r.params.validate().empty());
  }

  void chatDefaults() {
    CompletionRequest r = parseChatCompletion(R"({"model":"m","messages":[{"role":"user","content":"Hi"}],"temperature":null})", limits());
    QCOMPARE(r.params.temperature, 1.0f);  // OpenAI's default
    QCOMPARE(r.params.max_tokens, limits().maxTokens);
    QCOMPARE(r.n, 1);
    QVERIFY(!r.stream);
    QVERIFY(!r.hasSeed);
  }

  void maxCompletionTokensAndStopArray() {
    CompletionRequest r = parseChatCompletion(
        R"({"model":"m","messages":[{"role":"developer","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
            {"role":"assistant","content":null},{"role":"user","content":"x"}],"max_completion_tokens":5,"stop":["x","yz"]})",
        limits());
    QCOMPARE(r.params.max_tokens, 5);
    QCOMPARE(r.params.stop, (std::vector<std::string>{"x", "yz"}));
    QCOMPARE(r.messages[0].role, std::string("system"));
    QCOMPARE(r.messages[0].content, std::string("ab"));
    QCOMPARE(r.messages[1].content, std::string());
  }

  void logprobs() {
    const QByteArray m = R"("model":"m","messages":[{"role":"user","content":"x"}])";
    QCOMPARE(parseChatCompletion("{" + m + "}", limits()).params.num_logprobs, -1);
    QCOMPARE(parseChatCompletion("{" + m + R"(,"logprobs":true})", limits()).params.num_logprobs, 0);
    QCOMPARE(parseChatCompletion("{" + m + R"(,"logprobs":true,"top_logprobs":3})", limits()).params.num_logprobs, 3);
    QCOMPARE(parseChatCompletion("{" + m + R"(,"logprobs":false})", limits()).params.num_logprobs, -1);
    QCOMPARE(parseTextCompletion(R"({"model":"m","prompt":"a","logprobs":2})", limits()).params.num_logprobs, 2);
  }

  void topPZeroMeansTopTokenOnly() {
    CompletionRequest r = parseChatCompletion(R"({"model":"m","messages":[{"role":"user","content":"x"}],"top_p":0})", limits());
    QVERIFY(r.params.top_p > 0.0f && r.params.top_p < 1e-3f);
    QVERIFY(r.params.validate().empty());
  }

  void badBodies_data() {
    QTest::addColumn<QByteArray>("body");
    QTest::addColumn<QString>("param");
    QTest::newRow("not json") << QByteArray("{\"model\":") << QString();
    QTest::newRow("not an object") << QByteArray("[1,2]") << QString();
    // A raw NUL (or any control character) inside a string, or a raw form feed outside one:
    // invalid JSON that Qt's parser would take (issue 46, item 8).
    QTest::newRow("raw NUL in a string") << QByteArray("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a\0b\"}]}", 58)
                                         << QString();
    QTest::newRow("raw tab in a string") << QByteArray("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a\tb\"}]}")
                                         << QString();
    QTest::newRow("raw form feed outside") << QByteArray("{\"model\":\"m\",\f\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}")
                                           << QString();
    QTest::newRow("no model") << QByteArray(R"({"messages":[{"role":"user","content":"x"}]})") << "model";
    QTest::newRow("model a number") << QByteArray(R"({"model":3,"messages":[{"role":"user","content":"x"}]})") << "model";
    QTest::newRow("no messages") << QByteArray(R"({"model":"m"})") << "messages";
    QTest::newRow("empty messages") << QByteArray(R"({"model":"m","messages":[]})") << "messages";
    QTest::newRow("messages a string") << QByteArray(R"({"model":"m","messages":"hi"})") << "messages";
    QTest::newRow("message not object") << QByteArray(R"({"model":"m","messages":[1]})") << "messages[0]";
    QTest::newRow("bad role") << QByteArray(R"({"model":"m","messages":[{"role":"wizard","content":"x"}]})") << "messages[0].role";
    QTest::newRow("tool result without its call") << QByteArray(R"({"model":"m","messages":[{"role":"tool","content":"x"}]})") << "messages[0].tool_call_id";
    QTest::newRow("tool call not an object") << QByteArray(R"({"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[1]}]})") << "messages[0].tool_calls[0]";
    QTest::newRow("content number") << QByteArray(R"({"model":"m","messages":[{"role":"user","content":5}]})") << "messages[0].content";
    QTest::newRow("user content null") << QByteArray(R"({"model":"m","messages":[{"role":"user","content":null}]})") << "messages[0].content";
    QTest::newRow("image part") << QByteArray(R"({"model":"m","messages":[{"role":"user","content":[{"type":"image_url"}]}]})")
                                << "messages[0].content[0]";
    const QByteArray m = R"("model":"m","messages":[{"role":"user","content":"x"}])";
    QTest::newRow("temperature string") << "{" + m + R"(,"temperature":"hot"})" << "temperature";
    QTest::newRow("temperature 3") << "{" + m + R"(,"temperature":3})" << "temperature";
    QTest::newRow("temperature -1") << "{" + m + R"(,"temperature":-1})" << "temperature";
    QTest::newRow("top_p 1.5") << "{" + m + R"(,"top_p":1.5})" << "top_p";
    QTest::newRow("max_tokens 0") << "{" + m + R"(,"max_tokens":0})" << "max_tokens";
    QTest::newRow("max_tokens huge") << "{" + m + R"(,"max_tokens":100000000})" << "max_tokens";
    QTest::newRow("max_tokens fraction") << "{" + m + R"(,"max_tokens":2.5})" << "max_tokens";
    QTest::newRow("max_completion_tokens string") << "{" + m + R"(,"max_completion_tokens":"9"})" << "max_completion_tokens";
    QTest::newRow("n 0") << "{" + m + R"(,"n":0})" << "n";
    QTest::newRow("n 1000") << "{" + m + R"(,"n":1000})" << "n";
    QTest::newRow("stop number") << "{" + m + R"(,"stop":7})" << "stop";
    QTest::newRow("stop five") << "{" + m + R"(,"stop":["a","b","c","d","e"]})" << "stop";
    QTest::newRow("stop empty string") << "{" + m + R"(,"stop":[""]})" << "stop[0]";
    QTest::newRow("stop item number") << "{" + m + R"(,"stop":["a",1]})" << "stop[1]";
    QTest::newRow("seed string") << "{" + m + R"(,"seed":"1"})" << "seed";
    QTest::newRow("presence 3") << "{" + m + R"(,"presence_penalty":3})" << "presence_penalty";
    QTest::newRow("frequency -3") << "{" + m + R"(,"frequency_penalty":-3})" << "frequency_penalty";
    QTest::newRow("stream string") << "{" + m + R"(,"stream":"yes"})" << "stream";
    QTest::newRow("stream_options without stream") << "{" + m + R"(,"stream_options":{"include_usage":true}})" << "stream_options";
    QTest::newRow("include_usage string") << "{" + m + R"(,"stream":true,"stream_options":{"include_usage":1}})"
                                          << "stream_options.include_usage";
    QTest::newRow("logprobs string") << "{" + m + R"(,"logprobs":"yes"})" << "logprobs";
    QTest::newRow("top_logprobs 21") << "{" + m + R"(,"logprobs":true,"top_logprobs":21})" << "top_logprobs";
    QTest::newRow("top_logprobs without logprobs") << "{" + m + R"(,"top_logprobs":2})" << "top_logprobs";
  }

  void escapedControlCharactersAreFine() {
    const auto parsed = parseChatCompletion(R"({"model":"m","messages":[{"role":"user","content":"a\u0000b\tc"}]})", limits());
    QCOMPARE(parsed.messages.at(0).content, std::string("a\0b\tc", 5));
  }

  void badBodies() {
    QFETCH(QByteArray, body);
    QFETCH(QString, param);
    ApiError e = chatError(body);
    QCOMPARE(e.status, 400);
    QCOMPARE(e.type, QStringLiteral("invalid_request_error"));
    QCOMPARE(e.param, param);
    QVERIFY(!e.message.isEmpty());
  }

  void errorShape() {
    ApiError e = ApiError::badRequest("bad", "n", "c");
    QJsonObject o = QJsonDocument::fromJson(e.toJson()).object().value("error").toObject();
    QCOMPARE(o.value("message").toString(), QStringLiteral("bad"));
    QCOMPARE(o.value("type").toString(), QStringLiteral("invalid_request_error"));
    QCOMPARE(o.value("param").toString(), QStringLiteral("n"));
    QCOMPARE(o.value("code").toString(), QStringLiteral("c"));
    QVERIFY(QJsonDocument::fromJson(ApiError::badRequest("x").toJson()).object().value("error").toObject().value("param").isNull());
  }

  void textPrompts() {
    CompletionRequest r = parseTextCompletion(R"({"model":"m","prompt":"Once upon"})", limits());
    QCOMPARE(r.kind, CompletionRequest::Kind::text);
    QCOMPARE(r.prompt, std::string("Once upon"));
    r = parseTextCompletion(R"({"model":"m","prompt":["Once"]})", limits());
    QCOMPARE(r.prompt, std::string("Once"));
    r = parseTextCompletion(R"({"model":"m","prompt":[1,2,3]})", limits());
    QCOMPARE(r.promptTokens, (std::vector<int32_t>{1, 2, 3}));
    for (const char* bad : {R"({"model":"m"})", R"({"model":"m","prompt":""})", R"({"model":"m","prompt":[]})",
                            R"({"model":"m","prompt":[-1]})", R"({"model":"m","prompt":["a","b"]})", R"({"model":"m","prompt":{"a":1}})",
                            R"({"model":"m","prompt":"x","logprobs":6})"}) {
      bool refused = false;
      try {
        parseTextCompletion(bad, limits());
      } catch (const ApiError& e) {
        refused = e.status == 400;
      }
      QVERIFY2(refused, bad);
    }
  }

  // Whatever bytes arrive, the parser answers with a request or an ApiError, nothing else.
  void garbageNeverEscapes() {
    const QByteArray base = R"({"model":"m","messages":[{"role":"user","content":"x"}],"n":2,"stop":["a"],"temperature":0.5})";
    for (int cut = 0; cut <= base.size(); ++cut) {
      for (const QByteArray& body : {base.left(cut), base.left(cut) + QByteArray(1, char(0xff)), base.mid(cut)}) {
        try {
          parseChatCompletion(body, limits());
        } catch (const ApiError& e) {
          QCOMPARE(e.status, 400);
        }
      }
    }
  }
};

QTEST_APPLESS_MAIN(TestCompletionRequest)
#include "test_completion_request.moc"
