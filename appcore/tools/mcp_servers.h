#pragma once
// The user's MCP servers in the app: read from mcp.json (the mcpServers shape other apps read,
// mcp/mcp_config.h) beside the app's configuration, one McpConnection each, started at load;
// their tools offered to a chat as OpenAI `tools` (engine/chat/tool_calls.h) under names that
// stay apart across servers; and the user's consent, kept per server and tool in a file of its
// own (mcp-consent.json): a call runs without asking only where the user chose "Always allow".

#include <QHash>
#include <QObject>
#include <QSet>
#include <QString>
#include <QStringList>
#include <QVector>

class McpConnection;

class McpServers : public QObject {
  Q_OBJECT
 public:
  // `configDir`: where mcp.json and mcp-consent.json are (the app's configuration folder by default).
  explicit McpServers(QString configDir = defaultConfigDir(), QObject* parent = nullptr);
  ~McpServers() override;

  static QString defaultConfigDir();
  QString configPath() const;

  // Reads mcp.json again: servers whose entry did not change keep running, the rest restart.
  void reload();
  const QVector<McpConnection*>& connections() const { return m_connections; }
  McpConnection* connection(const QString& server) const;
  QStringList problems() const { return m_problems; }  // mcp.json's, one sentence each

  // What a model is offered: the Ready servers' tools among `servers` (all when empty), as an
  // OpenAI tools array. A tool's name is its own unless a server before it has one of the same
  // name; then it is "<server>_<tool>" (letters, digits, _ and - only).
  QString toolsJson(const QStringList& servers = {}) const;
  struct Target {
    McpConnection* connection = nullptr;
    QString tool;  // the server's own name for it
  };
  // The server and tool behind a name toolsJson gave; no connection when there is none.
  Target resolve(const QString& functionName, const QStringList& servers = {}) const;

  bool alwaysAllowed(const QString& server, const QString& tool) const;
  void setAlwaysAllowed(const QString& server, const QString& tool, bool allowed);

 signals:
  void changed();  // the servers, their states or their tools

 private:
  struct Offer {
    QString function;  // the name the model sees
    McpConnection* connection;
    int tool;  // index in connection->tools()
  };
  QVector<Offer> offers(const QStringList& servers) const;
  void loadConsent();
  void saveConsent() const;

  QString m_dir;
  QVector<McpConnection*> m_connections;
  QStringList m_problems;
  QSet<QString> m_allowed;  // "server\ttool"
};
