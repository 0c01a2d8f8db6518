#pragma once
// Tool servers: the user's MCP servers as mcp.json lists them (the mcpServers shape LM Studio,
// Claude Desktop and Cursor read), each with its state (starting, ready with its tools, failed
// and why), its tools with their descriptions and whether each runs without asking ("Always
// allow", which the user can take back here), and mcp.json itself to edit: saved (the user's
// alone, mode 0600: it may hold keys) and read again, servers whose entry changed restarting.
// Which servers a chat may call is the chat's (its Tools menu).

#include <QDialog>

class McpServers;
class QLabel;
class QPlainTextEdit;
class QTreeWidget;

class ToolServersDialog : public QDialog {
  Q_OBJECT
 public:
  explicit ToolServersDialog(McpServers& servers, QWidget* parent = nullptr);

 private:
  void showServers();
  void loadConfig();
  void saveConfig();

  McpServers& m_servers;
  QTreeWidget* m_tree;
  QLabel* m_problems;
  QPlainTextEdit* m_config;
  QLabel* m_saved;
};
