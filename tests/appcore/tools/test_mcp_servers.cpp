// The app's MCP servers (appcore/tools/mcp_servers.h, mcp_connection.h): mcp.json read from the
// configuration folder, each server started on its own thread (the `mcp` Python SDK's server
// over stdio, and a command that fails), its tools offered as OpenAI tools under names that stay
// apart across servers, calls answered by signal and stoppable, consent kept across restarts,
// and a reload that keeps unchanged servers running and ends the removed ones.

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <cstdlib>

#include "appcore/tools/mcp_connection.h"
#include "appcore/tools/mcp_servers.h"

namespace {

QString env(const char* name) { return QString::fromLocal8Bit(std::getenv(name)); }

// An mcp.json entry that runs the SDK's test server over stdio.
QJsonObject python_server() {
  return QJsonObject{{"command", env("PAGEDCHAT_PYTHON")},
                     {"args", QJsonArray{env("PAGEDCHAT_SOURCE_DIR") + "/tests/mcp/servers/tool_server.py"}}};
}

void write_config(const QTemporaryDir& dir, const QJsonObject& servers) {
  QFile f(dir.filePath("mcp.json"));
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write(QJsonDocument(QJsonObject{{"mcpServers", servers}}).toJson());
}

QStringList names(const QString& toolsJson) {
  QStringList out;
  for (const QJsonValue& t : QJsonDocument::fromJson(toolsJson.toUtf8()).array())
    out << t["function"]["name"].toString();
  return out;
}

}  // namespace

class TestMcpServers : public QObject {
  Q_OBJECT

 private slots:
  void serversStartAndOfferTheirTools() {
    QTemporaryDir dir;
    write_config(dir, {{"files", python_server()},
                       {"more files", python_server()},
                       {"broken", QJsonObject{{"command", "sh"}, {"args", QJsonArray{"-c", "echo no key >&2; exit 4"}}}},
                       {"off", QJsonObject{{"command", "true"}, {"disabled", true}}}});
    McpServers servers(dir.path());
    QVERIFY(servers.problems().isEmpty());
    QCOMPARE(servers.connections().size(), 4);
    McpConnection* files = servers.connection("files");
    McpConnection* more = servers.connection("more files");
    McpConnection* broken = servers.connection("broken");
    QTRY_COMPARE_WITH_TIMEOUT(files->state(), McpConnection::State::Ready, 30000);
    QTRY_COMPARE_WITH_TIMEOUT(more->state(), McpConnection::State::Ready, 30000);
    QTRY_COMPARE_WITH_TIMEOUT(broken->state(), McpConnection::State::Failed, 30000);
    QVERIFY2(broken->failure().contains("'broken' exited with code 4: no key"), qPrintable(broken->failure()));
    QCOMPARE(servers.connection("off")->state(), McpConnection::State::Off);

    // The first server's tools under their own names, the second's under "<server>_<tool>".
    const QStringList offered = names(servers.toolsJson());
    QVERIFY(offered.contains("read_file"));
    QVERIFY(offered.contains("more_files_read_file"));
    QCOMPARE(offered.count("read_file"), 1);
    const QJsonArray tools = QJsonDocument::fromJson(servers.toolsJson({"files"}).toUtf8()).array();
    QCOMPARE(names(servers.toolsJson({"files"})).size(), static_cast<int>(files->tools().size()));
    for (const QJsonValue& t : tools) {
      QCOMPARE(t["type"].toString(), QStringLiteral("function"));
      if (t["function"]["name"] == "read_file")
        QVERIFY(t["function"]["parameters"]["properties"].toObject().contains("path"));
    }
    const McpServers::Target target = servers.resolve("more_files_add");
    QCOMPARE(target.connection, more);
    QCOMPARE(target.tool, QStringLiteral("add"));
    QVERIFY(!servers.resolve("no_such_tool").connection);
    QVERIFY(!servers.resolve("more_files_add", {"files"}).connection);  // that server is not on for this chat
  }

  void callsAnswerBySignalAndStop() {
    QTemporaryDir dir;
    write_config(dir, {{"files", python_server()}});
    McpServers servers(dir.path());
    McpConnection* c = servers.connection("files");
    QTRY_COMPARE_WITH_TIMEOUT(c->state(), McpConnection::State::Ready, 30000);
    QSignalSpy finished(c, &McpConnection::callFinished);
    QSignalSpy failed(c, &McpConnection::callFailed);
    QSignalSpy progress(c, &McpConnection::callProgress);

    const int add = c->call("add", R"({"a": 20, "b": 22})");
    QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 1, 20000);
    QCOMPARE(finished[0][0].toInt(), add);
    QCOMPARE(finished[0][1].toString(), QStringLiteral("42"));
    QCOMPARE(finished[0][2].toBool(), false);

    const int count = c->call("count_to", R"({"n": 3})");
    QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 2, 20000);
    QCOMPARE(finished[1][0].toInt(), count);
    QCOMPARE(progress.size(), 3);

    // A hanging call stopped while it runs; one queued behind it, stopped before it starts.
    const int hang = c->call("hang", "{}");
    const int queued = c->call("add", R"({"a": 1, "b": 1})");
    c->stopCall(queued);
    QTest::qWait(300);
    c->stopCall(hang);
    QTRY_COMPARE_WITH_TIMEOUT(failed.size(), 2, 10000);
    QCOMPARE(failed[0][0].toInt(), hang);
    QVERIFY2(failed[0][1].toString().contains("was stopped"), qPrintable(failed[0][1].toString()));
    QCOMPARE(failed[1][0].toInt(), queued);
    QCOMPARE(finished.size(), 2);

    // A tool list that changes is listed again.
    QSignalSpy changed(c, &McpConnection::stateChanged);
    QVERIFY(!c->hasTool("shout"));
    c->call("learn_tool", "{}");
    QTRY_VERIFY_WITH_TIMEOUT(c->hasTool("shout"), 20000);

    // A crash mid-call fails the call and the server, with its reason.
    const int crash = c->call("crash", "{}");
    QTRY_COMPARE_WITH_TIMEOUT(failed.size(), 3, 20000);
    QCOMPARE(failed[2][0].toInt(), crash);
    QTRY_COMPARE_WITH_TIMEOUT(c->state(), McpConnection::State::Failed, 10000);
    QVERIFY2(c->failure().contains("exited with code 3"), qPrintable(c->failure()));
    QVERIFY(names(servers.toolsJson()).isEmpty());
    // And it can be started again.
    c->start();
    QTRY_COMPARE_WITH_TIMEOUT(c->state(), McpConnection::State::Ready, 30000);
  }

  void consentIsKeptAcrossRestarts() {
    QTemporaryDir dir;
    write_config(dir, {});
    {
      McpServers servers(dir.path());
      QVERIFY(!servers.alwaysAllowed("files", "read_file"));
      servers.setAlwaysAllowed("files", "read_file", true);
      servers.setAlwaysAllowed("web", "fetch", true);
      servers.setAlwaysAllowed("web", "fetch", false);
    }
    McpServers again(dir.path());
    QVERIFY(again.alwaysAllowed("files", "read_file"));
    QVERIFY(!again.alwaysAllowed("files", "add"));
    QVERIFY(!again.alwaysAllowed("web", "fetch"));
  }

  void reloadKeepsUnchangedServersAndEndsRemovedOnes() {
    QTemporaryDir dir;
    write_config(dir, {{"a", python_server()}, {"b", python_server()}});
    McpServers servers(dir.path());
    McpConnection* a = servers.connection("a");
    QTRY_COMPARE_WITH_TIMEOUT(a->state(), McpConnection::State::Ready, 30000);
    write_config(dir, {{"a", python_server()}, {"c", QJsonObject{{"url", "ftp://nowhere"}}}});
    servers.reload();
    QCOMPARE(servers.connection("a"), a);  // the same connection, still running
    QCOMPARE(a->state(), McpConnection::State::Ready);
    QVERIFY(!servers.connection("b"));
    QVERIFY(!servers.connection("c"));
    QCOMPARE(servers.problems().size(), 1);
    QVERIFY(servers.problems()[0].startsWith("server 'c': "));
  }

  // A server that never answers its start does not hold the app's exit for the start's timeout.
  void aServerStillStartingDoesNotHoldTheExit() {
    QTemporaryDir dir;
    write_config(dir, {{"mute", QJsonObject{{"command", "sh"}, {"args", QJsonArray{"-c", "sleep 60"}}}}});
    QElapsedTimer timer;
    {
      McpServers servers(dir.path());
      QCOMPARE(servers.connection("mute")->state(), McpConnection::State::Starting);
      QTest::qWait(300);
      timer.start();
    }
    QVERIFY2(timer.elapsed() < 4000, qPrintable(QString::number(timer.elapsed())));
  }

  void aBadConfigFileIsSaid() {
    QTemporaryDir dir;
    QFile f(dir.filePath("mcp.json"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{ not json");
    f.close();
    McpServers servers(dir.path());
    QVERIFY(servers.connections().isEmpty());
    QCOMPARE(servers.problems().size(), 1);
    QVERIFY(servers.problems()[0].startsWith("the file is not JSON"));
    QTemporaryDir empty;
    QVERIFY(McpServers(empty.path()).problems().isEmpty());  // no file: no servers, nothing wrong
  }
};

QTEST_GUILESS_MAIN(TestMcpServers)
#include "test_mcp_servers.moc"
