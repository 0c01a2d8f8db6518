#pragma once
// The chat's "Tools" button under the input: its menu lists the user's MCP servers (from
// mcp.json, appcore/tools/mcp_servers.h) with their state, each checkable for this chat; "Use
// in the next reply" names one of the chat's tools that the next reply must call (the turn's
// tool_choice); the calls a turn may make; and "Tool servers…", the dialog that edits mcp.json.
// The button's text says how many servers the chat has on. It shows and asks: the chat's tools
// are the ChatController's.

#include <QString>
#include <QToolButton>

#include "appcore/chat/chat_record.h"

class McpServers;
class QMenu;

class ChatToolsButton : public QToolButton {
  Q_OBJECT
 public:
  explicit ChatToolsButton(QWidget* parent = nullptr);
  void setServers(McpServers* servers);  // null: no tools in this window
  // The chat shown's tools, and the tool its next reply must call ("": the model chooses).
  void showChat(const ChatTools& tools, const QString& forcedTool);

 signals:
  void toolsChanged(const ChatTools& tools);
  void forcedToolChosen(const QString& function);  // "": none
  void serversDialogRequested();

 private:
  void buildMenu();
  void updateText();

  McpServers* m_servers = nullptr;
  QMenu* m_menu;
  ChatTools m_tools;
  QString m_forced;
};
