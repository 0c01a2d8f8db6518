// The remote client against our own pagedchat-server on loopback, started by the test: greedy
// text streamed from it is the local engine's text for the same prompt (pagedchat-cli generate);
// three samples in one request, the same again with the same seed; Stop aborts the request on
// the server; a wrong or missing key is 401; a busy server is 429 with Retry-After; a server
// killed midway is a cut stream with what arrived kept; usage and cached tokens are read; a pool
// watcher that never reads is disconnected; a lesson resets the pool between requests only.

#include <QtTest>

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <nlohmann/json.hpp>

#include <atomic>
#include <mutex>
#include <thread>

#include "remote/openai_client.h"
#include "remote/pool_client.h"
#include "support/remote_test_servers.h"
#include "support/test_env.h"

using namespace pagedchat::remote;

namespace {
using pagedchat::test::ask;
using pagedchat::test::kLongStoryAsk;

size_t collect(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// A plain GET (the health and metrics routes are not the client's business).
std::string get(const std::string& url, long* status = nullptr) {
  std::string body;
  CURL* h = curl_easy_init();
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &collect);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
  curl_easy_perform(h);
  long code = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
  if (status) *status = code;
  curl_easy_cleanup(h);
  return body;
}

double metric(const std::string& url, const std::string& name) {
  const std::string text = get(url + "/metrics");
  const size_t at = text.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::stod(text.substr(at + name.size() + 2));
}

// What the reset test reads of a pool frame's JSON (server/api/pool_watch.h).
struct PoolWatchCheck {
  int blocks = -1, hostBlocks = -1, blockSize = -1, free = 0;
  int64_t step = -1;
  static PoolWatchCheck of(const std::string& json) {
    PoolWatchCheck c;
    const nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
    if (!j.is_object()) return c;
    c.blocks = static_cast<int>(j.value("blocks", nlohmann::json::array()).size());
    c.hostBlocks = static_cast<int>(j.value("host_blocks", nlohmann::json::array()).size());
    c.blockSize = j.value("block_size", -1);
    c.step = j.value("step", int64_t{-1});
    for (const nlohmann::json& b : j.value("blocks", nlohmann::json::array())) c.free += b.value("s", "") == "free";
    return c;
  }
};

}  // namespace

class TestRemotePagedchatServer : public QObject {
  Q_OBJECT
  std::string m_model;

 private slots:
  void initTestCase() {
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    PC_REQUIRE_ENV(server, "PAGEDCHAT_SERVER");
    PC_REQUIRE_ENV(cli, "PAGEDCHAT_CLI");
    m_model = model;
  }

  void greedyTextIsTheLocalEnginesAndSamplesRepeatWithTheirSeed() {
    pagedchat::test::PagedchatServer server(QString::fromStdString(m_model));
    QVERIFY(!server.url.empty());
    const RemoteModels models = list_models({server.url, {}});
    QVERIFY2(models.error.ok(), models.error.sentence().c_str());
    QCOMPARE(models.ids, std::vector<std::string>{"SmolLM2-135M-Instruct.Q4_1"});

    const std::string prompt = "Name three rivers of Europe.";
    QProcess local;
    local.start(qEnvironmentVariable("PAGEDCHAT_CLI"), {"generate", "--model", QString::fromStdString(m_model), "--prompt",
                                                        QString::fromStdString(prompt), "--max-tokens", "40"});
    QVERIFY(local.waitForFinished(120000));
    QCOMPARE(local.exitCode(), 0);
    const std::string localText = QString::fromUtf8(local.readAllStandardOutput()).chopped(1).toStdString();  // its newline

    std::string streamed;
    const RemoteChatResult r = stream_chat({server.url, {}}, ask(prompt, 40), [&](const RemoteDelta& d) { streamed += d.text; });
    QVERIFY2(r.error.ok(), r.error.sentence().c_str());
    QCOMPARE(r.texts.at(0), localText);
    QCOMPARE(streamed, localText);
    QCOMPARE(r.finish_reasons.at(0), std::string("length"));
    QCOMPARE(r.usage.completion_tokens, 40);
    QVERIFY(r.usage.prompt_tokens > 0);
    QVERIFY(r.first_token_ms > 0);
    // The same conversation again: its prompt comes from the server's prefix cache.
    const RemoteChatResult again = stream_chat({server.url, {}}, ask(prompt, 40));
    QCOMPARE(again.texts.at(0), localText);
    QVERIFY2(again.usage.cached_tokens > 0, qPrintable(QString::number(again.usage.cached_tokens)));

    RemoteChatRequest three = ask("Give a name for a friendly robot.", 16);
    three.n = 3;
    three.temperature = 0.9;
    three.seed = 7;
    const RemoteChatResult a = stream_chat({server.url, {}}, three);
    QVERIFY2(a.error.ok(), a.error.sentence().c_str());
    QCOMPARE(a.texts.size(), size_t(3));
    for (size_t i = 0; i < 3; ++i) QVERIFY(!a.texts[i].empty() && !a.finish_reasons[i].empty());
    const RemoteChatResult b = stream_chat({server.url, {}}, three);
    QCOMPARE(b.texts, a.texts);
  }

  // A beam compare on a remote chat goes as use_beam_search: the server's two beams, best first,
  // each a whole reply (beams are not sampled: the same twice).
  void beamsAreTheServersBeams() {
    pagedchat::test::PagedchatServer server(QString::fromStdString(m_model));
    QVERIFY(!server.url.empty());
    RemoteChatRequest r = ask("Name three rivers of Europe.", 12);
    r.n = 2;
    r.beam_search = true;
    const RemoteChatResult first = stream_chat({server.url, {}}, r);
    QVERIFY2(first.error.ok(), first.error.sentence().c_str());
    QCOMPARE(first.texts.size(), size_t{2});
    QVERIFY(!first.texts[0].empty() && !first.texts[1].empty());
    QVERIFY(first.texts[0] != first.texts[1]);  // two beams, not one reply twice
    const RemoteChatResult again = stream_chat({server.url, {}}, r);
    QCOMPARE(again.texts, first.texts);
  }

  void stopAbortsTheRequestOnTheServer() {
    pagedchat::test::PagedchatServer server(QString::fromStdString(m_model));
    QVERIFY(!server.url.empty());
    std::atomic<bool> stop{false};
    int deltas = 0;
    const RemoteChatResult r = stream_chat({server.url, {}}, ask(kLongStoryAsk, 400), [&](const RemoteDelta&) {
      if (++deltas == 3) stop = true;
    }, &stop);
    QCOMPARE(r.error.kind, RemoteErrorKind::stopped);
    QVERIFY(r.chunks.at(0) >= 3 && r.chunks.at(0) < 400);
    QTRY_COMPARE_WITH_TIMEOUT(metric(server.url, "pagedchat_http_requests_active"), 0.0, 10000);
    // The server goes on serving.
    QVERIFY(stream_chat({server.url, {}}, ask("Hi!", 4)).error.ok());
  }

  void aKeyIsAskedForAndABusyServerSaysWhenToRetry() {
    pagedchat::test::PagedchatServer server(QString::fromStdString(m_model), {"--api-key", "s3cret", "--max-active", "1"});
    QVERIFY(!server.url.empty());
    const RemoteChatResult none = stream_chat({server.url, {}}, ask("Hi!", 4));
    QCOMPARE(none.error.kind, RemoteErrorKind::unauthorized);
    QCOMPARE(none.error.http_status, 401);
    const RemoteChatResult wrong = stream_chat({server.url, "nope"}, ask("Hi!", 4));
    QCOMPARE(wrong.error.kind, RemoteErrorKind::unauthorized);
    QVERIFY(QString::fromStdString(wrong.error.sentence()).contains("API key"));

    const Endpoint keyed{server.url, "s3cret"};
    std::atomic<bool> started{false}, stop{false};
    RemoteChatResult first;
    std::thread long_one([&] {
      first = stream_chat(keyed, ask(kLongStoryAsk, 400), [&](const RemoteDelta&) { started = true; }, &stop);
    });
    for (int i = 0; i < 600 && !started; ++i) QThread::msleep(50);
    QVERIFY(started);
    const RemoteChatResult busy = stream_chat(keyed, ask("Hi!", 4));
    stop = true;
    long_one.join();
    QCOMPARE(busy.error.kind, RemoteErrorKind::rate_limited);
    QCOMPARE(busy.error.retry_after_s, 1);
    QVERIFY(QString::fromStdString(busy.error.sentence()).contains("try again in 1 s"));
    QCOMPARE(first.error.kind, RemoteErrorKind::stopped);
  }

  // A teacher's server (--allow-pool-control): paused, a request waits; the steps a client asks
  // for run one each (three steps: at most three tokens, the watched frames' step numbers within
  // them); resumed, the request ends.
  // Without the flag, control is refused (403) and says how to allow it.
  void aWatchedPoolIsSteppedByItsClient() {
    pagedchat::test::PagedchatServer plain(QString::fromStdString(m_model));
    QVERIFY(!plain.url.empty());
    const RemoteError refused = control_pool({plain.url, {}}, "pause");
    QCOMPARE(refused.kind, RemoteErrorKind::forbidden);
    QVERIFY2(refused.server_message.find("--allow-pool-control") != std::string::npos, refused.sentence().c_str());

    pagedchat::test::PagedchatServer server(QString::fromStdString(m_model), {"--allow-pool-control"});
    QVERIFY(!server.url.empty());
    std::mutex m;
    std::vector<int64_t> steps;  // of each frame the watch received
    std::atomic<bool> stopWatching{false};
    std::thread watching([&] {
      watch_pool({server.url, {}}, [&](std::string_view json) {
        const size_t at = json.find("\"step\":");
        std::lock_guard<std::mutex> lock(m);
        steps.push_back(std::stoll(std::string(json.substr(at + 7, 20))));
      }, &stopWatching);
    });
    auto frames = [&] {
      std::lock_guard<std::mutex> lock(m);
      return steps;
    };
    QTRY_VERIFY_WITH_TIMEOUT(!frames().empty(), 10000);
    QVERIFY(control_pool({server.url, {}}, "pause").ok());
    // Paused, a new watcher still gets its first frame, and a snapshot is still answered.
    std::string paused;
    QVERIFY(pool_snapshot({server.url, {}}, &paused).ok());
    QVERIFY(paused.find("\"blocks\"") != std::string::npos);
    std::atomic<int> deltas{0};
    RemoteChatResult reply;
    std::thread asking([&] { reply = stream_chat({server.url, {}}, ask("Name three rivers of Europe.", 12), [&](const RemoteDelta&) { ++deltas; }); });
    QTest::qWait(500);
    QCOMPARE(deltas.load(), 0);  // paused: nothing runs
    const size_t before = frames().size();
    const int64_t pausedAt = frames().back();
    for (int i = 0; i < 3; ++i) QVERIFY(control_pool({server.url, {}}, "step").ok());
    QTRY_VERIFY_WITH_TIMEOUT(deltas.load() >= 1 && frames().size() > before, 10000);  // the prefill's step: blocks, a token
    QTest::qWait(300);
    QVERIFY2(deltas.load() <= 3, qPrintable(QString::number(deltas.load())));
    const std::vector<int64_t> seen = frames();
    for (size_t i = before; i < seen.size(); ++i) QVERIFY(seen[i] > pausedAt && seen[i] <= pausedAt + 3);
    QVERIFY(control_pool({server.url, {}}, "next_event").ok());
    QVERIFY(control_pool({server.url, {}}, "resume").ok());
    asking.join();
    QVERIFY2(reply.error.ok(), reply.error.sentence().c_str());
    QCOMPARE(reply.finish_reasons.at(0), std::string("length"));
    stopWatching = true;
    watching.join();
  }

  // A lesson's scene on a teacher's server: reset gives a fresh pool of the shape asked (every
  // block free, step 0, the model kept), refused while a request runs there (409) and for a shape
  // out of range (400); the stream's response id names the request's sequences in the frames.
  void aPoolIsResetForALessonBetweenRequestsOnly() {
    pagedchat::test::PagedchatServer server(QString::fromStdString(m_model), {"--allow-pool-control"});
    QVERIFY(!server.url.empty());
    const RemotePoolShape lesson{48, 16, 4, 256, 32};
    QVERIFY(reset_pool({server.url, {}}, lesson).ok());
    std::string json;
    PoolWatchCheck fresh;
    QTRY_VERIFY_WITH_TIMEOUT(pool_snapshot({server.url, {}}, &json).ok() && (fresh = PoolWatchCheck::of(json)).blocks == 48, 10000);
    QCOMPARE(fresh.hostBlocks, 16);
    QCOMPARE(fresh.blockSize, 4);
    QCOMPARE(fresh.step, int64_t{0});
    QCOMPARE(fresh.free, 48);

    RemotePoolShape bad = lesson;
    bad.block_size = 3;
    const RemoteError refused = reset_pool({server.url, {}}, bad);
    QCOMPARE(refused.kind, RemoteErrorKind::bad_request);
    QVERIFY2(refused.server_message.find("block_size") != std::string::npos, refused.sentence().c_str());

    // Paused, a request waits in the pool: a reset now is refused, and the frames name the request
    // by the id its stream began with.
    QVERIFY(control_pool({server.url, {}}, "pause").ok());
    std::string responseId;
    std::atomic<bool> started{false};
    RemoteChatResult reply;
    std::thread asking([&] {
      reply = stream_chat({server.url, {}}, ask("Name three rivers of Europe.", 6), {}, nullptr, [&](const std::string& id) {
        responseId = id;
        started = true;
      });
    });
    QTRY_VERIFY_WITH_TIMEOUT(started.load(), 10000);
    QVERIFY2(responseId.rfind("chatcmpl-", 0) == 0, responseId.c_str());
    const RemoteError busy = reset_pool({server.url, {}}, lesson);
    QCOMPARE(busy.http_status, 409);
    QVERIFY2(busy.server_message.find("in flight") != std::string::npos, busy.sentence().c_str());
    QVERIFY(control_pool({server.url, {}}, "step").ok());
    QTRY_VERIFY_WITH_TIMEOUT(pool_snapshot({server.url, {}}, &json).ok() && json.find("\"response\":\"" + responseId + "\"") != std::string::npos,
                             10000);
    // Its blocks are the reset pool's: 4 tokens each.
    QCOMPARE(PoolWatchCheck::of(json).blockSize, 4);
    // A reset without a shape (the app leaving the lesson's pool) gives the server's own pool
    // back (16-token blocks, as it started): with a request in flight, once that has ended.
    QVERIFY(reset_pool({server.url, {}}, {}).ok());
    QVERIFY(control_pool({server.url, {}}, "step").ok());
    QTest::qWait(300);
    QVERIFY(pool_snapshot({server.url, {}}, &json).ok());
    QVERIFY2(json.find("\"response\":\"" + responseId + "\"") != std::string::npos, "the request was cut by the reset");
    QCOMPARE(PoolWatchCheck::of(json).blockSize, 4);
    QVERIFY(control_pool({server.url, {}}, "resume").ok());
    asking.join();
    QVERIFY2(reply.error.ok(), reply.error.sentence().c_str());
    QCOMPARE(reply.response_id, responseId);
    QTRY_VERIFY_WITH_TIMEOUT(pool_snapshot({server.url, {}}, &json).ok() && PoolWatchCheck::of(json).blockSize == 16, 10000);
    QCOMPARE(PoolWatchCheck::of(json).step, int64_t{0});
    // With none in flight, at once.
    QVERIFY(reset_pool({server.url, {}}, lesson).ok());
    QTRY_VERIFY_WITH_TIMEOUT(pool_snapshot({server.url, {}}, &json).ok() && PoolWatchCheck::of(json).blockSize == 4, 10000);
    QVERIFY(reset_pool({server.url, {}}, {}).ok());
    QTRY_VERIFY_WITH_TIMEOUT(pool_snapshot({server.url, {}}, &json).ok() && PoolWatchCheck::of(json).blockSize == 16, 10000);
  }

  // A watcher that never reads its pool stream is let go, not grown into: with blocks of one
  // token each step sends a frame of the whole pool (hundreds of KiB); once more than two frames
  // wait unread for the slow-reader timeout, the server closes the connection. The socket's
  // receive buffer is kept small so that the server's side fills within a few frames.
  void aWatcherThatNeverReadsIsDisconnected() {
    pagedchat::test::PagedchatServer server(QString::fromStdString(m_model),
                                            {"--block-size", "1", "--slow-reader-timeout", "1", "--max-unread-bytes", "65536"});
    QVERIFY(!server.url.empty());
    const int port = std::stoi(server.url.substr(server.url.rfind(':') + 1));
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    QVERIFY(fd >= 0);
    const int small = 4096;
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    QCOMPARE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    const std::string get = "GET /v1/kv/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    QCOMPARE(::send(fd, get.data(), get.size(), 0), static_cast<ssize_t>(get.size()));
    // Frames while a reply is written: a block (and a frame) a token.
    const RemoteChatResult r = stream_chat({server.url, {}}, ask(kLongStoryAsk, 150));
    QVERIFY2(r.error.ok(), r.error.sentence().c_str());
    QTest::qWait(1500);  // past the slow-reader timeout
    // Drained now, the stream ends: what was sent, then the server's close (EOF or a reset).
    const timeval wait{3, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
    std::vector<char> buf(1 << 16);
    int64_t received = 0;
    ssize_t got = 0;
    while ((got = ::recv(fd, buf.data(), buf.size(), 0)) > 0) received += got;
    const int why = errno;
    ::close(fd);
    QVERIFY2(got == 0 || (got < 0 && why == ECONNRESET), qPrintable(QStringLiteral("still open after %1 bytes (errno %2)").arg(received).arg(why)));
    QVERIFY(received > 0);  // the head and the first frames came
    // The server goes on: a reader's request is answered.
    QVERIFY(stream_chat({server.url, {}}, ask("Hi", 2)).error.ok());
  }

  void aServerKilledMidwayIsACutStreamWithItsTextKept() {
    pagedchat::test::PagedchatServer server(QString::fromStdString(m_model));
    QVERIFY(!server.url.empty());
    int deltas = 0;
    std::string seen;
    const RemoteChatResult r = stream_chat({server.url, {}}, ask(kLongStoryAsk, 400), [&](const RemoteDelta& d) {
      seen += d.text;
      if (++deltas == 5) server.process.kill();
    });
    QCOMPARE(r.error.kind, RemoteErrorKind::stream_cut);
    QVERIFY(r.chunks.at(0) >= 5);
    QCOMPARE(r.texts.at(0), seen);
    // And then, once it is gone (SIGKILL takes a moment), nothing answers there.
    QVERIFY(server.process.waitForFinished(5000));
    QCOMPARE(stream_chat({server.url, {}}, ask("Hi!", 4)).error.kind, RemoteErrorKind::refused);
  }
};

QTEST_APPLESS_MAIN(TestRemotePagedchatServer)
#include "test_remote_pagedchat_server.moc"
