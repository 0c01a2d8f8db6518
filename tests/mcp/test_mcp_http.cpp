// The MCP client over Streamable HTTP (mcp/http_transport.h) against the `mcp` Python SDK's own
// HTTP server (tests/mcp/servers/tool_server.py --http PORT, uvicorn on loopback): the session id,
// replies as event streams, progress while a call runs, cancellation, the configured headers on
// every request, a result of several MiB, and the failures a URL can have: nothing listening, a
// wrong path, a server that dies mid-session.

#include <QProcess>
#include <QtTest>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "mcp/http_transport.h"
#include "mcp/mcp_client.h"
#include "support/free_port.h"

using namespace pagedchat::mcp;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

int free_port() { return pagedchat::test::free_loopback_port(); }

bool accepts(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

std::unique_ptr<Client> http_client(const std::string& url, std::map<std::string, std::string> headers = {},
                                    Limits limits = {}) {
  HttpEndpoint e;
  e.url = url;
  e.headers = std::move(headers);
  auto transport = std::make_unique<HttpTransport>("web", e, limits);
  return std::make_unique<Client>("web", std::move(transport), limits);
}

}  // namespace

class TestMcpHttp : public QObject {
  Q_OBJECT

  QProcess server_;
  int port_ = 0;
  std::string url_;

  bool start_server() {
    port_ = free_port();
    url_ = "http://127.0.0.1:" + std::to_string(port_) + "/mcp";
    server_.setProcessChannelMode(QProcess::ForwardedErrorChannel);
    server_.start(QString::fromStdString(env("PAGEDCHAT_PYTHON")),
                  {QString::fromStdString(env("PAGEDCHAT_SOURCE_DIR") + "/tests/mcp/servers/tool_server.py"), "--http",
                   QString::number(port_)});
    for (int i = 0; i < 300 && !accepts(port_); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return accepts(port_);
  }

 private slots:
  void initTestCase() {
    QVERIFY2(!env("PAGEDCHAT_PYTHON").empty(), "PAGEDCHAT_PYTHON is not set (tests/CMakeLists.txt)");
    QVERIFY2(start_server(), "the SDK's HTTP server did not start");
  }
  void cleanupTestCase() {
    server_.kill();
    server_.waitForFinished();
  }

  void aSessionOverHttp() {
    auto client = http_client(url_, {{"Authorization", "Bearer s3cret"}});
    const Error started = client->start();
    QVERIFY2(started.ok(), started.sentence.c_str());
    QCOMPARE(client->server().name, std::string("test-tools"));
    std::vector<Tool> tools;
    QVERIFY(client->list_tools(&tools).ok());
    QVERIFY(tools.size() >= 8);
    ToolResult r;
    const Error added = client->call_tool("add", R"({"a": 40, "b": 2})", &r, {});
    QVERIFY2(added.ok(), added.sentence.c_str());
    QCOMPARE(r.text, std::string("42"));
    // The configured header went with the call's request.
    QVERIFY(client->call_tool("header", R"({"name": "authorization"})", &r, {}).ok());
    QCOMPARE(r.text, std::string("Bearer s3cret"));
    QVERIFY(client->ping().ok());
  }

  void progressArrivesWhileTheCallRuns() {
    auto client = http_client(url_);
    QVERIFY(client->start().ok());
    int steps = 0;
    Client::CallOptions options;
    options.on_progress = [&](double done, double total, const std::string&) {
      ++steps;
      QCOMPARE(total, 4.0);
      QCOMPARE(done, double(steps));
    };
    ToolResult r;
    const Error e = client->call_tool("count_to", R"({"n": 4})", &r, options);
    QVERIFY2(e.ok(), e.sentence.c_str());
    QCOMPARE(steps, 4);
    QCOMPARE(r.text, std::string("counted to 4"));
  }

  void timeoutAndStopCancelAndTheSessionGoesOn() {
    auto client = http_client(url_);
    QVERIFY(client->start().ok());
    ToolResult r;
    Client::CallOptions timed;
    timed.timeout_s = 1;
    const Error timeout = client->call_tool("hang", "{}", &r, timed);
    QVERIFY2(timeout.kind == ErrorKind::timeout, timeout.sentence.c_str());
    std::atomic<bool> stop = false;
    std::thread stopper([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      stop = true;
    });
    Client::CallOptions stoppable;
    stoppable.stop = &stop;
    const auto t0 = std::chrono::steady_clock::now();
    QCOMPARE(client->call_tool("hang", "{}", &r, stoppable).kind, ErrorKind::cancelled);
    stopper.join();
    QVERIFY(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
    QVERIFY(client->call_tool("add", R"({"a": 1, "b": 2})", &r, {}).ok());
    QCOMPARE(r.text, std::string("3"));
    // close() does not wait for the hanging calls' streams.
    const auto t1 = std::chrono::steady_clock::now();
    client->close();
    QVERIFY(std::chrono::steady_clock::now() - t1 < std::chrono::seconds(3));
  }

  void aBigResultIsCutAndSaid() {
    auto client = http_client(url_);
    QVERIFY(client->start().ok());
    ToolResult r;
    const Error e = client->call_tool("big", R"({"mebibytes": 3})", &r, {});
    QVERIFY2(e.ok(), e.sentence.c_str());
    QVERIFY(r.truncated);
    QCOMPARE(r.full_bytes, size_t{3} << 20);
    Limits small;
    small.max_message_bytes = size_t{1} << 20;
    auto strict = http_client(url_, {}, small);
    QVERIFY(strict->start().ok());
    const Error over = strict->call_tool("big", R"({"mebibytes": 2})", &r, {});
    QCOMPARE(over.kind, ErrorKind::protocol);
    QVERIFY2(over.sentence.find("a message over 1 MiB") != std::string::npos, over.sentence.c_str());
  }

  void urlFailuresAreSaid() {
    const std::string nowhere = "http://127.0.0.1:" + std::to_string(free_port()) + "/mcp";
    Error e = http_client(nowhere)->start();
    QCOMPARE(e.kind, ErrorKind::http);
    QVERIFY2(e.sentence.find("nothing answers at the MCP server 'web' (" + nowhere + "): is it running?") !=
                 std::string::npos,
             e.sentence.c_str());
    e = http_client("http://127.0.0.1:" + std::to_string(port_) + "/not-mcp")->start();
    QCOMPARE(e.kind, ErrorKind::http);
    QVERIFY2(e.sentence.find("answered HTTP 404") != std::string::npos, e.sentence.c_str());
  }

  // Last: it ends the server.
  void aServerThatDiesMidSessionIsSaid() {
    auto client = http_client(url_);
    QVERIFY(client->start().ok());
    server_.kill();
    server_.waitForFinished();
    ToolResult r;
    const Error e = client->call_tool("add", R"({"a": 1, "b": 2})", &r, {});
    QCOMPARE(e.kind, ErrorKind::http);
    QVERIFY2(e.sentence.find("'web'") != std::string::npos, e.sentence.c_str());
  }
};

QTEST_GUILESS_MAIN(TestMcpHttp)
#include "test_mcp_http.moc"
