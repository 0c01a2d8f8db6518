#pragma once
// The app's MCP servers for the suites that drive tools through the session or the window: an
// mcp.json in the app's (test-mode) configuration folder whose "files" server is the mcp SDK's
// test server (tests/mcp/servers/tool_server.py, run by the test venv's Python), with no consent
// kept from an earlier run; and a notes file for read_file to read. QVERIFY inside.

#include <QtTest>

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStandardPaths>

#include <cstdlib>

#include "appcore/tools/mcp_servers.h"

namespace pagedchat::test {

inline QString envText(const char* name) { return QString::fromLocal8Bit(std::getenv(name)); }

inline void writeMcpConfigWithTestServer() {
  QDir().mkpath(McpServers::defaultConfigDir());
  QFile f(QDir(McpServers::defaultConfigDir()).filePath(QStringLiteral("mcp.json")));
  QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
  const QJsonObject files{{"command", envText("PAGEDCHAT_PYTHON")},
                          {"args", QJsonArray{envText("PAGEDCHAT_SOURCE_DIR") + "/tests/mcp/servers/tool_server.py"}}};
  f.write(QJsonDocument(QJsonObject{{"mcpServers", QJsonObject{{"files", files}}}}).toJson());
  QFile::remove(QDir(McpServers::defaultConfigDir()).filePath(QStringLiteral("mcp-consent.json")));
}

// notes.txt in the app's data folder, holding `text`; its path.
inline QString writeNotes(const QByteArray& text) {
  const QString path = QDir(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation)).filePath(QStringLiteral("notes.txt"));
  QDir().mkpath(QFileInfo(path).path());
  QFile f(path);
  if (f.open(QIODevice::WriteOnly | QIODevice::Truncate)) f.write(text);
  return path;
}

}  // namespace pagedchat::test
