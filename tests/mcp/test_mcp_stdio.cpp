// The MCP client over stdio (mcp/mcp_client.h, mcp/stdio_transport.h) against real servers
// written with the `mcp` Python SDK (tests/mcp/servers/tool_server.py), and against broken
// ones: a crash mid-call, a server that never answers, one that writes junk, one that nests a
// reply 100000 deep, a result of several MiB, a command that does not exist. Every failure must
// be an Error of the right kind with a sentence that names the server, and close() must leave no
// process behind.

#include <QtTest>

#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "mcp/mcp_client.h"
#include "mcp/stdio_transport.h"

using namespace pagedchat::mcp;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

StdioCommand python_server(const std::string& script, std::vector<std::string> extra = {}) {
  StdioCommand c;
  c.command = env("PAGEDCHAT_PYTHON");
  c.args = {env("PAGEDCHAT_SOURCE_DIR") + "/tests/mcp/servers/" + script};
  c.args.insert(c.args.end(), extra.begin(), extra.end());
  return c;
}

struct Session {
  StdioTransport* transport = nullptr;  // owned by client
  std::unique_ptr<Client> client;
};

Session open_session(const StdioCommand& command, Limits limits = {}, const std::string& name = "test") {
  auto t = std::make_unique<StdioTransport>(name, command, limits);
  Session s;
  s.transport = t.get();
  s.client = std::make_unique<Client>(name, std::move(t), limits);
  return s;
}

bool alive(pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0; }

const Tool* find_tool(const std::vector<Tool>& tools, const std::string& name) {
  for (const Tool& t : tools)
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace

class TestMcpStdio : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY2(!env("PAGEDCHAT_PYTHON").empty(), "PAGEDCHAT_PYTHON is not set (tests/CMakeLists.txt)");
  }

  void startsListsAndCallsTools() {
    Session s = open_session(python_server("tool_server.py"));
    const Error started = s.client->start();
    QVERIFY2(started.ok(), started.sentence.c_str());
    QCOMPARE(s.client->server().name, std::string("test-tools"));
    QVERIFY(supported_protocol_version(s.client->server().protocol_version));

    std::vector<Tool> tools;
    const Error listed = s.client->list_tools(&tools);
    QVERIFY2(listed.ok(), listed.sentence.c_str());
    for (const char* name : {"read_file", "add", "count_to", "big", "crash", "hang", "learn_tool", "fail"})
      QVERIFY2(find_tool(tools, name), name);
    const Tool* read = find_tool(tools, "read_file");
    QCOMPARE(read->description, std::string("Returns the text of a file."));
    QVERIFY(read->input_schema.find("\"path\"") != std::string::npos);

    ToolResult sum;
    const Error added = s.client->call_tool("add", R"({"a": 2, "b": 40})", &sum, {});
    QVERIFY2(added.ok(), added.sentence.c_str());
    QVERIFY(!sum.is_error);
    QCOMPARE(sum.text, std::string("42"));

    const QString path = QDir::temp().filePath("pagedchat_mcp_read.txt");
    const std::string content = "line one\nline two: ünïcode ✓\n";
    std::ofstream(path.toStdString()) << content;
    ToolResult file;
    const Error read_ok =
        s.client->call_tool("read_file", R"({"path": ")" + path.toStdString() + R"("})", &file, {});
    QVERIFY2(read_ok.ok(), read_ok.sentence.c_str());
    QCOMPARE(file.text, content);
    QVERIFY(!file.truncated);
    QVERIFY(s.client->ping().ok());
  }

  void progressReachesTheCaller() {
    Session s = open_session(python_server("tool_server.py"));
    QVERIFY(s.client->start().ok());
    std::vector<std::pair<double, double>> steps;
    std::vector<std::string> messages;
    Client::CallOptions options;
    options.on_progress = [&](double done, double total, const std::string& message) {
      steps.push_back({done, total});
      messages.push_back(message);
    };
    ToolResult result;
    const Error e = s.client->call_tool("count_to", R"({"n": 5})", &result, options);
    QVERIFY2(e.ok(), e.sentence.c_str());
    QCOMPARE(result.text, std::string("counted to 5"));
    QCOMPARE(steps.size(), size_t{5});
    for (int i = 0; i < 5; ++i) {
      QCOMPARE(steps[i].first, double(i + 1));
      QCOMPARE(steps[i].second, 5.0);
      QCOMPARE(messages[i], "step " + std::to_string(i + 1));
    }
  }

  void aToolThatFailsIsAResultNotAFailure() {
    Session s = open_session(python_server("tool_server.py"));
    QVERIFY(s.client->start().ok());
    ToolResult result;
    const Error e = s.client->call_tool("fail", "{}", &result, {});
    QVERIFY2(e.ok(), e.sentence.c_str());
    QVERIFY(result.is_error);
    QVERIFY2(result.text.find("fail") != std::string::npos, result.text.c_str());  // the SDK's words
    // The session goes on.
    ToolResult sum;
    QVERIFY(s.client->call_tool("add", R"({"a": 1, "b": 1})", &sum, {}).ok());
    QCOMPARE(sum.text, std::string("2"));
  }

  void anUnknownToolIsRefusedBySentence() {
    Session s = open_session(python_server("tool_server.py"));
    QVERIFY(s.client->start().ok());
    ToolResult result;
    const Error e = s.client->call_tool("no_such_tool", "{}", &result, {});
    // The SDK answers either with a JSON-RPC error or with an error result; both are said.
    if (e.ok()) QVERIFY(result.is_error);
    else QVERIFY2(e.kind == ErrorKind::server_error && e.sentence.find("'test'") != std::string::npos, e.sentence.c_str());
    ToolResult bad;
    const Error not_object = s.client->call_tool("add", "[1, 2]", &bad, {});
    QCOMPARE(not_object.kind, ErrorKind::protocol);
    // A name cut mid-character (a small model's) goes out with U+FFFD instead of throwing.
    const Error broken = s.client->call_tool("add\xe2\x82", R"({"a": 1, "b": 2})", &bad, {});
    if (broken.ok()) QVERIFY(bad.is_error);
    QVERIFY(s.client->ping().ok());
  }

  void aCrashMidCallIsSaid() {
    Session s = open_session(python_server("tool_server.py"));
    QVERIFY(s.client->start().ok());
    ToolResult result;
    const Error e = s.client->call_tool("crash", "{}", &result, {});
    QCOMPARE(e.kind, ErrorKind::exited);
    QVERIFY2(e.sentence.find("'test' exited with code 3") != std::string::npos, e.sentence.c_str());
    QVERIFY2(e.sentence.find("crashing on purpose") != std::string::npos, e.sentence.c_str());
    QVERIFY2(e.sentence.find("tools/call") != std::string::npos, e.sentence.c_str());
    // Later calls fail at once, with the same reason.
    const Error again = s.client->call_tool("add", R"({"a": 1, "b": 1})", &result, {});
    QCOMPARE(again.kind, ErrorKind::exited);
  }

  void aCallThatNeverAnswersTimesOutAndIsCancelled() {
    Session s = open_session(python_server("tool_server.py"));
    QVERIFY(s.client->start().ok());
    ToolResult result;
    Client::CallOptions options;
    options.timeout_s = 1;
    const auto t0 = std::chrono::steady_clock::now();
    const Error e = s.client->call_tool("hang", "{}", &result, options);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    QCOMPARE(e.kind, ErrorKind::timeout);
    QVERIFY2(e.sentence.find("did not answer tools/call in 1 s") != std::string::npos, e.sentence.c_str());
    QVERIFY2(took >= 0.9 && took < 5, std::to_string(took).c_str());
    // The server took the cancellation and still serves.
    ToolResult sum;
    const Error after = s.client->call_tool("add", R"({"a": 3, "b": 4})", &sum, {});
    QVERIFY2(after.ok(), after.sentence.c_str());
    QCOMPARE(sum.text, std::string("7"));
  }

  void stopCancelsARunningCall() {
    Session s = open_session(python_server("tool_server.py"));
    QVERIFY(s.client->start().ok());
    std::atomic<bool> stop = false;
    std::thread stopper([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      stop = true;
    });
    ToolResult result;
    Client::CallOptions options;
    options.stop = &stop;
    const auto t0 = std::chrono::steady_clock::now();
    const Error e = s.client->call_tool("hang", "{}", &result, options);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    stopper.join();
    QCOMPARE(e.kind, ErrorKind::cancelled);
    QVERIFY2(took < 2, std::to_string(took).c_str());
    QVERIFY(s.client->ping().ok());
  }

  void aChangedToolListIsSeen() {
    Session s = open_session(python_server("tool_server.py"));
    QVERIFY(s.client->start().ok());
    std::vector<Tool> tools;
    QVERIFY(s.client->list_tools(&tools).ok());
    QVERIFY(!find_tool(tools, "shout"));
    QVERIFY(!s.client->tools_changed());
    ToolResult result;
    QVERIFY(s.client->call_tool("learn_tool", "{}", &result, {}).ok());
    QVERIFY(s.client->tools_changed());
    QVERIFY(s.client->list_tools(&tools).ok());
    QVERIFY(!s.client->tools_changed());
    QVERIFY(find_tool(tools, "shout"));
    QVERIFY(s.client->call_tool("shout", R"({"text": "quiet"})", &result, {}).ok());
    QCOMPARE(result.text, std::string("QUIET"));
  }

  void aBigResultIsCutAndSaid() {
    Session s = open_session(python_server("tool_server.py"));
    QVERIFY(s.client->start().ok());
    ToolResult result;
    const Error e = s.client->call_tool("big", R"({"mebibytes": 5})", &result, {});
    QVERIFY2(e.ok(), e.sentence.c_str());
    QVERIFY(result.truncated);
    QCOMPARE(result.full_bytes, size_t{5} << 20);
    QVERIFY(result.text.size() < (size_t{1} << 20) + 200);
    QVERIFY2(result.text.find("[cut: the tool returned 5.0 MiB; the first 1.0 MiB are kept]") != std::string::npos,
             result.text.substr(result.text.size() - 100).c_str());
  }

  void aMessageOverTheLimitStopsTheServer() {
    Limits limits;
    limits.max_message_bytes = size_t{1} << 20;
    Session s = open_session(python_server("tool_server.py"), limits);
    QVERIFY(s.client->start().ok());
    const pid_t pid = s.transport->pid();
    ToolResult result;
    const Error e = s.client->call_tool("big", R"({"mebibytes": 2})", &result, {});
    QCOMPARE(e.kind, ErrorKind::protocol);
    QVERIFY2(e.sentence.find("a message over 1 MiB") != std::string::npos, e.sentence.c_str());
    s.client->close();
    QVERIFY(!alive(pid));
  }

  void junkIsSaidWhenNothingElseComes() {
    Limits limits;
    limits.start_timeout_s = 2;
    Session s = open_session(python_server("junk_server.py"), limits, "noisy");
    const Error e = s.client->start();
    QCOMPARE(e.kind, ErrorKind::timeout);
    QVERIFY2(e.sentence.find("'noisy' did not answer initialize in 2 s") != std::string::npos, e.sentence.c_str());
    QVERIFY2(e.sentence.find("not JSON-RPC: «{not json at all»") != std::string::npos, e.sentence.c_str());
  }

  void aMessageNestedTooDeepIsRefused() {
    Session s = open_session(python_server("junk_server.py", {"--deep"}), {}, "deep");
    const pid_t pid = s.transport->pid();
    const Error e = s.client->start();
    QCOMPARE(e.kind, ErrorKind::protocol);
    QVERIFY2(e.sentence.find("'deep' sent a message nested deeper than 64 levels") != std::string::npos,
             e.sentence.c_str());
    QVERIFY(!alive(pid));  // a server that breaks the protocol is ended
  }

  void aCommandThatCannotStartIsSaid() {
    StdioCommand c;
    c.command = "/nonexistent/mcp-server";
    Session s = open_session(c, {}, "ghost");
    const Error e = s.client->start();
    QCOMPARE(e.kind, ErrorKind::spawn_failed);
    QVERIFY2(e.sentence.find("could not start the MCP server 'ghost'") != std::string::npos, e.sentence.c_str());
    QVERIFY2(e.sentence.find("No such file or directory") != std::string::npos, e.sentence.c_str());
  }

  void aServerThatExitsAtOnceIsSaid() {
    StdioCommand c;
    c.command = "sh";
    c.args = {"-c", "echo 'missing API key' >&2; exit 7"};
    Session s = open_session(c, {}, "keyless");
    const Error e = s.client->start();
    QCOMPARE(e.kind, ErrorKind::exited);
    QVERIFY2(e.sentence.find("'keyless' exited with code 7: missing API key") != std::string::npos, e.sentence.c_str());
  }

  void theServerGetsItsEnvironment() {
    StdioCommand c;
    c.command = "sh";
    c.args = {"-c", "echo \"$MCP_TEST_VALUE\" >&2; exit 5"};
    c.env = {{"MCP_TEST_VALUE", "from the config"}};
    Session s = open_session(c, {}, "env");
    const Error e = s.client->start();
    QVERIFY2(e.sentence.find("exited with code 5: from the config") != std::string::npos, e.sentence.c_str());
  }

  void closeLeavesNoProcessBehind() {
    Session s = open_session(python_server("tool_server.py"));
    QVERIFY(s.client->start().ok());
    const pid_t pid = s.transport->pid();
    QVERIFY(alive(pid));
    s.client->close();
    QVERIFY(!alive(pid));
    // A server that ignores its closed input and SIGTERM is killed.
    StdioCommand stubborn;
    stubborn.command = "sh";
    stubborn.args = {"-c", "trap '' TERM; while true; do sleep 0.1; done"};
    Session t = open_session(stubborn, {}, "stubborn");
    const pid_t pid2 = t.transport->pid();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const auto t0 = std::chrono::steady_clock::now();
    t.client->close();
    QVERIFY(!alive(pid2));
    QVERIFY(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(4));
  }
};

QTEST_APPLESS_MAIN(TestMcpStdio)
#include "test_mcp_stdio.moc"
