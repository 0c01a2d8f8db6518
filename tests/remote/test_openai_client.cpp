// The remote client against servers whose every byte the test writes (support/canned_http_server.h):
// a good stream read whole, with usage and cached tokens; each failure a server or the network
// can give (401, 429 with Retry-After, 500, an error event, a stream closed early, a stall, a
// reply that is not OpenAI's, an event past the limit, nesting deep enough to hurt) said as its
// own kind, with what arrived kept; the request's JSON as OpenAI's API has it.

#include <QtTest>

#include <map>
#include <mutex>
#include <random>

#include <nlohmann/json.hpp>

#include "remote/openai_client.h"
#include "support/canned_http_server.h"

using namespace pagedchat::remote;
using pagedchat::test::CannedHttpServer;

namespace {
std::string chunk(int index, const std::string& text, const char* finish = nullptr) {
  nlohmann::json c = {{"index", index}, {"delta", {{"content", text}}}, {"finish_reason", nullptr}};
  if (finish) c["finish_reason"] = finish;
  return "data: " + nlohmann::json({{"model", "canned-model"}, {"choices", {c}}}).dump() + "\n\n";
}

RemoteChatRequest ask(int n = 1) {
  RemoteChatRequest r;
  r.model = "canned-model";
  r.messages = {{"system", "Be brief."}, {"user", "Hi?"}};
  r.n = n;
  return r;
}

RemoteChatResult run(const CannedHttpServer& server, const RemoteChatRequest& r = ask(), long stall = 120) {
  Endpoint e;
  e.base_url = server.url();
  e.stall_timeout_s = stall;
  return stream_chat(e, r);
}
}  // namespace

class TestOpenAiClient : public QObject {
  Q_OBJECT
 private slots:
  void aStreamIsReadWholeWithItsUsage() {
    const std::string usage =
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":3,\"prompt_tokens_details\":{\"cached_tokens\":8}}}\n\n";
    CannedHttpServer server(CannedHttpServer::answer(200, "text/event-stream",
                                                     chunk(0, "Hel") + chunk(1, "Yo") + chunk(0, "lo") + chunk(0, "", "stop") +
                                                         chunk(1, "", "length") + usage + "data: [DONE]\n\n"));
    std::vector<std::pair<int, std::string>> deltas;
    Endpoint e;
    e.base_url = server.url() + "/v1/";
    e.api_key = "k-123";
    const RemoteChatResult r = stream_chat(e, ask(2), [&](const RemoteDelta& d) { deltas.emplace_back(d.index, std::string(d.text)); });
    QVERIFY2(r.error.ok(), r.error.sentence().c_str());
    QCOMPARE(r.texts, (std::vector<std::string>{"Hello", "Yo"}));
    QCOMPARE(r.finish_reasons, (std::vector<std::string>{"stop", "length"}));
    QCOMPARE(r.chunks, (std::vector<int64_t>{2, 1}));
    QCOMPARE(deltas.size(), size_t(3));
    QCOMPARE(r.usage.prompt_tokens, 12);
    QCOMPARE(r.usage.completion_tokens, 3);
    QCOMPARE(r.usage.cached_tokens, 8);
    QCOMPARE(r.model, std::string("canned-model"));
    QVERIFY(r.first_token_ms >= 0 && r.first_token_ms <= r.total_ms);
    // What was sent: the route once /v1, the key, and OpenAI's request body.
    const std::string req = server.requests().at(0);
    QVERIFY2(req.rfind("POST /v1/chat/completions HTTP/1.1\r\n", 0) == 0, req.c_str());
    QVERIFY(req.find("Authorization: Bearer k-123\r\n") != std::string::npos);
    const nlohmann::json body = nlohmann::json::parse(req.substr(req.find("\r\n\r\n") + 4));
    QCOMPARE(body["model"].get<std::string>(), std::string("canned-model"));
    QCOMPARE(body["stream"].get<bool>(), true);
    QCOMPARE(body["stream_options"]["include_usage"].get<bool>(), true);
    QCOMPARE(body["n"].get<int>(), 2);
    QCOMPARE(body["messages"].size(), size_t(2));
    QCOMPARE(body["messages"][1]["content"].get<std::string>(), std::string("Hi?"));
    QVERIFY(!body.contains("frequency_penalty") && !body.contains("presence_penalty") && !body.contains("use_beam_search"));
  }

  // Penalties go as OpenAI names them; beams as the use_beam_search extension, n of them.
  void penaltiesAndBeamsAreSent() {
    CannedHttpServer server(CannedHttpServer::answer(200, "text/event-stream", chunk(0, "A", "stop") + chunk(1, "B", "stop") + "data: [DONE]\n\n"));
    RemoteChatRequest r = ask(2);
    r.frequency_penalty = 0.5;
    r.presence_penalty = -0.25;
    r.beam_search = true;
    QVERIFY(stream_chat({server.url(), {}}, r).error.ok());
    const std::string req = server.requests().at(0);
    const nlohmann::json body = nlohmann::json::parse(req.substr(req.find("\r\n\r\n") + 4));
    QCOMPARE(body["frequency_penalty"].get<double>(), 0.5);
    QCOMPARE(body["presence_penalty"].get<double>(), -0.25);
    QCOMPARE(body["use_beam_search"].get<bool>(), true);
    QCOMPARE(body["n"].get<int>(), 2);
  }

  // Tools go as OpenAI's: the array, tool_choice naming a function, earlier calls and their
  // results in the messages; a streamed call comes back in pieces joined by index (vLLM and
  // llama.cpp send the id and name first, then the arguments a few characters at a time).
  void toolsGoAndCallsComeBackWhole() {
    const std::string calls =
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"add\",\"arguments\":\"\"}}]}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"a\\\": 1,\"}}]}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\" \\\"b\\\": 2}\"}},"
        "{\"index\":1,\"id\":\"call_2\",\"function\":{\"name\":\"read_file\",\"arguments\":\"{}\"}}]}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n";
    CannedHttpServer server(CannedHttpServer::answer(200, "text/event-stream", calls));
    RemoteChatRequest r = ask(1);
    r.tools = R"([{"type":"function","function":{"name":"add","parameters":{"type":"object"}}}])";
    r.tool_choice = "add";
    r.messages.push_back({"assistant", "", {{"call_0", "add", "{\"a\":0}"}}});
    r.messages.push_back({"tool", "0", {}, "call_0"});
    const RemoteChatResult result = stream_chat({server.url(), {}}, r);
    QVERIFY(result.error.ok());
    QCOMPARE(result.finish_reasons.at(0), std::string("tool_calls"));
    QCOMPARE(result.tool_calls.at(0).size(), size_t(2));
    QCOMPARE(result.tool_calls[0][0], (RemoteToolCall{"call_1", "add", "{\"a\": 1, \"b\": 2}"}));
    QCOMPARE(result.tool_calls[0][1], (RemoteToolCall{"call_2", "read_file", "{}"}));
    const std::string req = server.requests().at(0);
    const nlohmann::json body = nlohmann::json::parse(req.substr(req.find("\r\n\r\n") + 4));
    QCOMPARE(body["tools"][0]["function"]["name"].get<std::string>(), std::string("add"));
    QCOMPARE(body["tool_choice"]["function"]["name"].get<std::string>(), std::string("add"));
    const nlohmann::json& sent = body["messages"];
    QCOMPARE(sent[sent.size() - 2]["tool_calls"][0]["function"]["arguments"].get<std::string>(), std::string("{\"a\":0}"));
    QCOMPARE(sent[sent.size() - 2]["tool_calls"][0]["type"].get<std::string>(), std::string("function"));
    QCOMPARE(sent.back()["role"].get<std::string>(), std::string("tool"));
    QCOMPARE(sent.back()["tool_call_id"].get<std::string>(), std::string("call_0"));
  }

  void routesAreJoinedOnce() {
    for (const char* base : {"http://h:1", "http://h:1/", "http://h:1/v1", "http://h:1/v1/"})
      QCOMPARE(route_url({base, {}}, "models"), std::string("http://h:1/v1/models"));
  }

  void withoutAModelTheServersFirstIsUsed() {
    CannedHttpServer server(CannedHttpServer::answer(200, "application/json", "{\"object\":\"list\",\"data\":[{\"id\":\"m1\"},{\"id\":\"m2\"}]}"));
    const RemoteModels models = list_models({server.url(), {}});
    QVERIFY(models.error.ok());
    QCOMPARE(models.ids, (std::vector<std::string>{"m1", "m2"}));
  }

  void statusesAreToldApart_data() {
    QTest::addColumn<int>("status");
    QTest::addColumn<int>("kind");
    QTest::addColumn<QString>("said");
    QTest::newRow("401") << 401 << int(RemoteErrorKind::unauthorized) << "API key";
    QTest::newRow("403") << 403 << int(RemoteErrorKind::forbidden) << "does not allow";
    QTest::newRow("404") << 404 << int(RemoteErrorKind::not_found) << "no such route or model";
    QTest::newRow("429") << 429 << int(RemoteErrorKind::rate_limited) << "try again in 3 s";
    QTest::newRow("400") << 400 << int(RemoteErrorKind::bad_request) << "rejected";
    QTest::newRow("503") << 503 << int(RemoteErrorKind::server_error) << "failed";
  }
  void statusesAreToldApart() {
    QFETCH(int, status);
    QFETCH(int, kind);
    QFETCH(QString, said);
    CannedHttpServer server(CannedHttpServer::answer(status, "application/json", "{\"error\":{\"message\":\"because of reasons\"}}",
                                                     status == 429 ? "Retry-After: 3\r\n" : ""));
    const RemoteChatResult r = run(server);
    QCOMPARE(int(r.error.kind), kind);
    QCOMPARE(r.error.http_status, status);
    QCOMPARE(r.error.server_message, std::string("because of reasons"));
    const QString sentence = QString::fromStdString(r.error.sentence());
    QVERIFY2(sentence.contains(said) && sentence.contains("because of reasons"), qPrintable(sentence));
  }

  void anErrorEventInsideTheStreamKeepsWhatCameBefore() {
    CannedHttpServer server(CannedHttpServer::answer(200, "text/event-stream",
                                                     chunk(0, "Part") + "data: {\"error\":{\"message\":\"out of memory\"}}\n\n"));
    const RemoteChatResult r = run(server);
    QCOMPARE(r.error.kind, RemoteErrorKind::server_error);
    QCOMPARE(r.error.server_message, std::string("out of memory"));
    QCOMPARE(r.texts.at(0), std::string("Part"));
  }

  // llama.cpp's server says a failure in an "error:" line of its own, not as data.
  void anErrorLineInsideTheStreamIsTheServersMessage() {
    CannedHttpServer server(CannedHttpServer::answer(
        200, "text/event-stream", chunk(0, "Part") + "error: {\"code\":500,\"message\":\"the prompt is too long\",\"type\":\"server_error\"}\n\n"));
    const RemoteChatResult r = run(server);
    QCOMPARE(r.error.kind, RemoteErrorKind::server_error);
    QCOMPARE(r.error.server_message, std::string("the prompt is too long"));
    QCOMPARE(r.texts.at(0), std::string("Part"));
  }

  // Pings, typed events of other uses, empty data and "error": null are no reason to fail.
  void harmlessEventsAreSkipped() {
    const std::string nullError = "data: {\"error\":null,\"choices\":[{\"index\":0,\"delta\":{\"content\":\"!\"}}]}\n\n";
    CannedHttpServer server(CannedHttpServer::answer(200, "text/event-stream",
                                                     "event: ping\ndata: {}\n\ndata:\n\n" + chunk(0, "Hi") + nullError +
                                                         chunk(0, "", "stop") + "data: [DONE]\n\n"));
    const RemoteChatResult r = run(server);
    QVERIFY2(r.error.ok(), r.error.sentence().c_str());
    QCOMPARE(r.texts.at(0), std::string("Hi!"));
  }

  // A server that never stops is cut off once it sent more than the request could need, and
  // nothing after [DONE] is read.
  void anEndlessStreamIsCutOff() {
    std::string endless;
    for (int i = 0; i < 2000; ++i) endless += chunk(0, "x");
    CannedHttpServer server(CannedHttpServer::answer(200, "text/event-stream", endless), 20000);
    RemoteChatRequest r = ask();
    r.max_tokens = 10;
    QElapsedTimer clock;
    clock.start();
    const RemoteChatResult out = run(server, r);
    QCOMPARE(out.error.kind, RemoteErrorKind::bad_response);
    QVERIFY(out.chunks.at(0) <= 2 * (10 + 64));
    QVERIFY2(clock.elapsed() < 10000, "the transfer was ended, not waited out");
    CannedHttpServer afterDone(CannedHttpServer::answer(200, "text/event-stream", chunk(0, "ok", "stop") + "data: [DONE]\n\n" + endless),
                               20000);
    clock.restart();
    const RemoteChatResult fine = run(afterDone);
    QVERIFY2(fine.error.ok(), fine.error.sentence().c_str());
    QCOMPARE(fine.texts.at(0), std::string("ok"));
    QVERIFY(clock.elapsed() < 10000);
  }

  void aStreamClosedBeforeItsEndIsCut() {
    CannedHttpServer server(CannedHttpServer::answer(200, "text/event-stream", chunk(0, "Once upon") + chunk(0, " a")));
    const RemoteChatResult r = run(server);
    QCOMPARE(r.error.kind, RemoteErrorKind::stream_cut);
    QCOMPARE(r.texts.at(0), std::string("Once upon a"));
    QVERIFY(QString::fromStdString(r.error.sentence()).contains("what arrived is kept"));
  }

  void aFinishedStreamNeedsNoDone() {
    CannedHttpServer server(CannedHttpServer::answer(200, "text/event-stream", chunk(0, "ok") + chunk(0, "", "stop")));
    const RemoteChatResult r = run(server);
    QVERIFY2(r.error.ok(), r.error.sentence().c_str());
  }

  void aServerThatStopsSendingIsGivenUp() {
    // libcurl averages the speed over its last seconds: the stall is seen a few seconds in.
    CannedHttpServer server(CannedHttpServer::answer(200, "text/event-stream", chunk(0, "slow")), 15000);
    const RemoteChatResult r = run(server, ask(), 1);
    QCOMPARE(r.error.kind, RemoteErrorKind::timeout);
    QCOMPARE(r.texts.at(0), std::string("slow"));
  }

  void aReplyThatIsNotAStreamIsReadAsOne() {
    CannedHttpServer server(CannedHttpServer::answer(
        200, "application/json",
        "{\"model\":\"x\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"Whole\"},\"finish_reason\":\"stop\"}]}"));
    const RemoteChatResult r = run(server);
    QVERIFY2(r.error.ok(), r.error.sentence().c_str());
    QCOMPARE(r.texts.at(0), std::string("Whole"));
  }

  void hostileRepliesAreBadResponses_data() {
    QTest::addColumn<QByteArray>("answer");
    QTest::newRow("html") << QByteArray::fromStdString(CannedHttpServer::answer(200, "text/html", "<html>hello</html>"));
    QTest::newRow("not json in the stream")
        << QByteArray::fromStdString(CannedHttpServer::answer(200, "text/event-stream", "data: hello\n\n"));
    QTest::newRow("choices not a list")
        << QByteArray::fromStdString(CannedHttpServer::answer(200, "text/event-stream", "data: {\"choices\":7}\n\n"));
    QTest::newRow("a choice index past any n")
        << QByteArray::fromStdString(CannedHttpServer::answer(200, "text/event-stream", "data: {\"choices\":[{\"index\":99999999}]}\n\n"));
    QTest::newRow("nested a million deep")
        << QByteArray::fromStdString(CannedHttpServer::answer(200, "text/event-stream", "data: " + std::string(1000000, '[') + "\n\n"));
    QTest::newRow("an event past the limit")
        << QByteArray::fromStdString(CannedHttpServer::answer(200, "text/event-stream", "data: \"" + std::string(3 << 20, 'a') + "\"\n\n"));
  }
  void hostileRepliesAreBadResponses() {
    QFETCH(QByteArray, answer);
    CannedHttpServer server(answer.toStdString());
    const RemoteChatResult r = run(server);
    QCOMPARE(r.error.kind, RemoteErrorKind::bad_response);
    QVERIFY(!r.error.sentence().empty());
  }

  // A server that takes no n (llama.cpp's refuses it with a 400): the samples come as n
  // requests of one, each its own seed, streamed as choices 0..n-1.
  void samplesFromAServerWithoutN() {
    CannedHttpServer server([](const std::string& request) {
      if (request.find("\"n\":") != std::string::npos)
        return CannedHttpServer::answer(400, "application/json", "{\"error\":{\"message\":\"Only one completion choice is allowed\"}}");
      const size_t at = request.find("\"seed\":");
      const std::string seed = at == std::string::npos ? "none" : request.substr(at + 7, request.find_first_of(",}", at) - at - 7);
      return CannedHttpServer::answer(200, "text/event-stream", chunk(0, "seed " + seed) + chunk(0, "", "stop") + "data: [DONE]\n\n");
    });
    RemoteChatRequest r = ask(3);
    r.seed = 10;
    std::mutex m;
    std::map<int, std::string> streamed;
    Endpoint e{server.url(), {}};
    const RemoteChatResult out = stream_chat(e, r, [&](const RemoteDelta& d) {
      std::lock_guard<std::mutex> lock(m);
      streamed[d.index] += d.text;
    });
    QVERIFY2(out.error.ok(), out.error.sentence().c_str());
    QCOMPARE(out.texts, (std::vector<std::string>{"seed 10", "seed 11", "seed 12"}));
    QCOMPARE(out.finish_reasons, (std::vector<std::string>{"stop", "stop", "stop"}));
    QCOMPARE(streamed[2], std::string("seed 12"));
    QCOMPARE(server.requests().size(), size_t(4));  // the refused one, then three
  }

  // A server that ignores n and answers one choice: that sample is kept, the others asked for
  // after it (seeds on from seed + 1), streamed as choices 1..n-1.
  void samplesFromAServerThatAnswersOneChoice() {
    CannedHttpServer server([](const std::string& request) {
      const size_t at = request.find("\"seed\":");
      const std::string seed = at == std::string::npos ? "none" : request.substr(at + 7, request.find_first_of(",}", at) - at - 7);
      return CannedHttpServer::answer(200, "text/event-stream", chunk(0, "seed " + seed) + chunk(0, "", "stop") + "data: [DONE]\n\n");
    });
    RemoteChatRequest r = ask(3);
    r.seed = 20;
    std::mutex m;
    std::map<int, std::string> streamed;
    const RemoteChatResult out = stream_chat({server.url(), {}}, r, [&](const RemoteDelta& d) {
      std::lock_guard<std::mutex> lock(m);
      streamed[d.index] += d.text;
    });
    QVERIFY2(out.error.ok(), out.error.sentence().c_str());
    QCOMPARE(out.texts, (std::vector<std::string>{"seed 20", "seed 21", "seed 22"}));
    QCOMPARE(out.finish_reasons, (std::vector<std::string>{"stop", "stop", "stop"}));
    QCOMPARE(streamed[0], std::string("seed 20"));
    QCOMPARE(streamed[2], std::string("seed 22"));
    QCOMPARE(server.requests().size(), size_t(3));  // the one answered with n, then two
  }

  void nothingListeningIsRefused() {
    int port;
    { CannedHttpServer gone(""); port = std::stoi(gone.url().substr(gone.url().rfind(':') + 1)); }
    Endpoint e;
    e.base_url = "http://127.0.0.1:" + std::to_string(port);
    const RemoteChatResult r = stream_chat(e, ask());
    QCOMPARE(r.error.kind, RemoteErrorKind::refused);
    QVERIFY(QString::fromStdString(r.error.sentence()).contains("is the server running"));
  }

  // Fuzz the chunk reader: random JSON-ish bytes never crash it, and text only grows.
  void randomChunksNeverCrash() {
    std::mt19937 rng(3);
    const std::vector<std::string> parts = {"{", "}", "[", "]", ",", ":", "\"choices\"", "\"index\"", "\"delta\"", "\"content\"",
                                            "\"x\"", "0", "-1", "1e999", "null", "true", "\"usage\"", "\"error\"", "\"\\u0000\"",
                                            "\"tool_calls\"", "\"function\"", "\"arguments\"", "\"name\"", "\"id\"", "99"};
    for (int trial = 0; trial < 3000; ++trial) {
      std::string s;
      const int len = static_cast<int>(rng() % 24);
      for (int i = 0; i < len; ++i) s += parts[rng() % parts.size()];
      RemoteChatResult r;
      apply_chunk(s, r, {});
      QVERIFY(r.texts.size() <= 128);
      for (const auto& calls : r.tool_calls) QVERIFY(calls.size() <= 64);
    }
  }
};

QTEST_APPLESS_MAIN(TestOpenAiClient)
#include "test_openai_client.moc"
