// mcp.json (mcp/mcp_config.h): the shape LM Studio, Claude Desktop and Cursor read, servers in
// the file's order; each wrong entry left out with a sentence that names it, the rest kept.

#include <QtTest>

#include <string>

#include "mcp/mcp_config.h"

using namespace pagedchat::mcp;

class TestMcpConfig : public QObject {
  Q_OBJECT

 private slots:
  void readsBothKindsInTheFilesOrder() {
    const Config c = parse_mcp_config(
        "{\"mcpServers\": {"
        "  \"zeta-files\": {\"command\": \"npx\", \"args\": [\"-y\", \"@modelcontextprotocol/server-filesystem\","
        "                   \"/home/me\"], \"env\": {\"DEBUG\": \"1\"}},"
        "  \"alpha-web\": {\"url\": \"https://example.org/mcp\", \"headers\": {\"Authorization\": \"Bearer abc\"}},"
        "  \"off\": {\"command\": \"uvx\", \"disabled\": true}"
        "}}");
    QVERIFY(c.problems.empty());
    QCOMPARE(c.servers.size(), size_t{3});
    QCOMPARE(c.servers[0].name, std::string("zeta-files"));
    QVERIFY(!c.servers[0].is_http());
    QCOMPARE(c.servers[0].stdio.command, std::string("npx"));
    QCOMPARE(c.servers[0].stdio.args.size(), size_t{3});
    QCOMPARE(c.servers[0].stdio.args[2], std::string("/home/me"));
    QCOMPARE(c.servers[0].stdio.env.at("DEBUG"), std::string("1"));
    QCOMPARE(c.servers[1].name, std::string("alpha-web"));
    QVERIFY(c.servers[1].is_http());
    QCOMPARE(c.servers[1].url, std::string("https://example.org/mcp"));
    QCOMPARE(c.servers[1].headers.at("Authorization"), std::string("Bearer abc"));
    QVERIFY(c.servers[2].disabled);
  }

  void aWrongEntryIsLeftOutAndSaid_data() {
    QTest::addColumn<QString>("entry");
    QTest::addColumn<QString>("problem");
    QTest::newRow("neither") << R"({})" << "give either \"command\"";
    QTest::newRow("both") << R"({"command": "a", "url": "http://x"})" << "give either \"command\"";
    QTest::newRow("command not a string") << R"({"command": 3})" << "'command' must be a program's name";
    QTest::newRow("empty command") << R"({"command": ""})" << "'command' must be a program's name";
    QTest::newRow("args not strings") << R"({"command": "a", "args": ["x", 1]})" << "'args' must be an array of strings";
    QTest::newRow("env not an object") << R"({"command": "a", "env": ["K=V"]})" << "'env' must be an object of strings";
    QTest::newRow("env value") << R"({"command": "a", "env": {"K": 1}})" << "'env.K' must be a string";
    QTest::newRow("url scheme") << R"({"url": "ftp://x"})" << "'url' must start with http:// or https://";
    QTest::newRow("headers") << R"({"url": "http://x", "headers": {"H": true}})" << "'headers.H' must be a string";
    QTest::newRow("not an object") << R"("npx")" << "must be an object";
  }
  void aWrongEntryIsLeftOutAndSaid() {
    QFETCH(QString, entry);
    QFETCH(QString, problem);
    const std::string text =
        R"({"mcpServers": {"good": {"command": "x"}, "bad": )" + entry.toStdString() + R"(, "after": {"url": "http://h/mcp"}}})";
    const Config c = parse_mcp_config(text);
    QCOMPARE(c.servers.size(), size_t{2});
    QCOMPARE(c.servers[0].name, std::string("good"));
    QCOMPARE(c.servers[1].name, std::string("after"));
    QCOMPARE(c.problems.size(), size_t{1});
    QVERIFY2(c.problems[0].rfind("server 'bad': ", 0) == 0, c.problems[0].c_str());
    QVERIFY2(c.problems[0].find(problem.toStdString()) != std::string::npos, c.problems[0].c_str());
  }

  void aWrongFileIsSaid() {
    for (const char* text : {"", "{", "[]", "{\"servers\": {}}", "{\"mcpServers\": []}"}) {
      const Config c = parse_mcp_config(text);
      QVERIFY(c.servers.empty());
      QCOMPARE(c.problems.size(), size_t{1});
    }
    QVERIFY(parse_mcp_config("{").problems[0].rfind("the file is not JSON", 0) == 0);
    QCOMPARE(parse_mcp_config("{\"mcpServers\": []}").problems[0], std::string("the file has no \"mcpServers\" object"));
  }
};

QTEST_APPLESS_MAIN(TestMcpConfig)
#include "test_mcp_config.moc"
