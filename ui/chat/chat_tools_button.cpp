// The chat's Tools menu (see chat_tools_button.h).
#include "ui/chat/chat_tools_button.h"

#include <QActionGroup>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMenu>

#include "appcore/tools/mcp_connection.h"
#include "appcore/tools/mcp_servers.h"

ChatToolsButton::ChatToolsButton(QWidget* parent) : QToolButton(parent), m_menu(new QMenu(this)) {
  setObjectName(QStringLiteral("chatTools"));
  setPopupMode(QToolButton::InstantPopup);
  setMenu(m_menu);
  m_menu->setObjectName(QStringLiteral("chatToolsMenu"));
  connect(m_menu, &QMenu::aboutToShow, this, &ChatToolsButton::buildMenu);
  updateText();
}

void ChatToolsButton::setServers(McpServers* servers) {
  m_servers = servers;
  if (servers) connect(servers, &McpServers::changed, this, &ChatToolsButton::updateText);
  updateText();
}

void ChatToolsButton::showChat(const ChatTools& tools, const QString& forcedTool) {
  m_tools = tools;
  m_forced = forcedTool;
  updateText();
}

void ChatToolsButton::updateText() {
  const int on = static_cast<int>(m_tools.servers.size());
  // Short: the row under the input holds it beside the compare controls. Its tooltip says more.
  setText(!m_forced.isEmpty() ? m_forced : on == 0 ? QString() : QString::number(on));
  setAccessibleName(tr("Tools"));
  QString tip = on == 0 ? tr("Tools: let this chat call tools from your MCP servers (mcp.json); choose the servers it may use")
                        : tr("Tools: this chat may call the tools of %1. Each call asks you first, unless you chose Always allow "
                             "for that tool.").arg(m_tools.servers.join(QStringLiteral(", ")));
  if (!m_forced.isEmpty()) tip += tr(" Its next reply calls %1.").arg(m_forced);
  setToolTip(tip);
}

void ChatToolsButton::buildMenu() {
  m_menu->clear();
  if (!m_servers || m_servers->connections().isEmpty()) {
    QAction* none = m_menu->addAction(tr("No tool servers yet: add one in Tool servers…"));
    none->setEnabled(false);
  } else {
    m_menu->addSection(tr("Servers this chat may call"));
    for (McpConnection* server : m_servers->connections()) {
      const QString name = server->name();
      QString state;
      switch (server->state()) {
        case McpConnection::State::Ready:
          state = server->tools().size() == 1 ? tr("1 tool") : tr("%1 tools").arg(server->tools().size());
          break;
        case McpConnection::State::Starting: state = tr("starting…"); break;
        case McpConnection::State::Failed: state = tr("failed"); break;
        case McpConnection::State::Off: state = tr("off"); break;
      }
      QAction* a = m_menu->addAction(tr("%1 (%2)").arg(name, state));
      a->setCheckable(true);
      a->setChecked(m_tools.servers.contains(name));
      if (server->state() == McpConnection::State::Failed) a->setToolTip(server->failure());
      connect(a, &QAction::toggled, this, [this, name](bool on) {
        ChatTools next = m_tools;
        next.servers.removeAll(name);
        if (on) next.servers.append(name);
        emit toolsChanged(next);
      });
    }
    // The chat's tools (of its servers that are ready): one may be the next reply's call.
    QMenu* use = m_menu->addMenu(tr("Use in the next reply"));
    use->setObjectName(QStringLiteral("useToolMenu"));
    const QJsonArray offered = QJsonDocument::fromJson(m_servers->toolsJson(m_tools.servers).toUtf8()).array();
    if (m_tools.servers.isEmpty() || offered.isEmpty()) {
      use->setEnabled(false);
    } else {
      QAction* any = use->addAction(tr("Any tool, or none (the model chooses)"));
      any->setCheckable(true);
      any->setChecked(m_forced.isEmpty());
      connect(any, &QAction::triggered, this, [this] { emit forcedToolChosen(QString()); });
      use->addSeparator();
      for (const QJsonValue& t : offered) {
        const QString function = t[QStringLiteral("function")][QStringLiteral("name")].toString();
        QAction* a = use->addAction(function);
        a->setCheckable(true);
        a->setChecked(function == m_forced);
        a->setToolTip(t[QStringLiteral("function")][QStringLiteral("description")].toString());
        connect(a, &QAction::triggered, this, [this, function] { emit forcedToolChosen(function); });
      }
    }
    QMenu* limit = m_menu->addMenu(tr("Calls per turn: %1").arg(m_tools.maxCallsPerTurn));
    auto* group = new QActionGroup(limit);
    for (const int n : {1, 2, 4, 8, 16, 32}) {
      QAction* a = limit->addAction(QString::number(n));
      a->setCheckable(true);
      a->setChecked(n == m_tools.maxCallsPerTurn);
      group->addAction(a);
      connect(a, &QAction::triggered, this, [this, n] {
        ChatTools next = m_tools;
        next.maxCallsPerTurn = n;
        emit toolsChanged(next);
      });
    }
  }
  m_menu->addSeparator();
  connect(m_menu->addAction(tr("Tool servers…")), &QAction::triggered, this, &ChatToolsButton::serversDialogRequested);
}
