// The Tool servers dialog (see tool_servers_dialog.h).
#include "ui/dialogs/tool_servers_dialog.h"

#include <QDesktopServices>
#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QFontDatabase>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTreeWidget>
#include <QUrl>
#include <QVBoxLayout>

#include "appcore/io/save_file.h"
#include "appcore/tools/mcp_connection.h"
#include "appcore/tools/mcp_servers.h"
#include "ui/theme/app_theme.h"

namespace {

const char* const kExample = R"({
  "mcpServers": {
    "files": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"]
    },
    "web": {
      "url": "http://127.0.0.1:8080/mcp",
      "headers": {"Authorization": "Bearer <token>"}
    }
  }
}
)";

}  // namespace

ToolServersDialog::ToolServersDialog(McpServers& servers, QWidget* parent) : QDialog(parent), m_servers(servers) {
  setObjectName(QStringLiteral("toolServersDialog"));
  setWindowTitle(tr("Tool servers"));
  auto* v = new QVBoxLayout(this);
  auto* intro = new QLabel(tr("Tools come from MCP servers you list in <a href=\"folder\">%1</a>. A chat calls only the servers "
                              "its Tools menu turns on, and each call asks you first unless you chose Always allow for that tool.")
                               .arg(m_servers.configPath().toHtmlEscaped()),
                           this);
  intro->setWordWrap(true);
  connect(intro, &QLabel::linkActivated, this, [this] {
    QDesktopServices::openUrl(QUrl::fromLocalFile(QFileInfo(m_servers.configPath()).absolutePath()));
  });
  v->addWidget(intro);

  m_tree = new QTreeWidget(this);
  m_tree->setObjectName(QStringLiteral("toolServers"));
  m_tree->setColumnCount(3);
  m_tree->setHeaderLabels({tr("Server / tool"), tr("State / description"), tr("Always allow")});
  m_tree->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  m_tree->header()->setSectionResizeMode(1, QHeaderView::Stretch);
  m_tree->header()->setSectionResizeMode(2, QHeaderView::ResizeToContents);
  m_tree->setMinimumHeight(160);
  connect(m_tree, &QTreeWidget::itemChanged, this, [this](QTreeWidgetItem* item, int column) {
    if (column != 2 || !item->parent()) return;
    m_servers.setAlwaysAllowed(item->parent()->text(0), item->text(0), item->checkState(2) == Qt::Checked);
  });
  v->addWidget(m_tree, 1);
  m_problems = new QLabel(this);
  m_problems->setObjectName(QStringLiteral("mcpProblems"));
  m_problems->setWordWrap(true);
  v->addWidget(m_problems);

  auto* edit = new QLabel(tr("mcp.json (servers run a command, or are reached at a URL):"), this);
  v->addWidget(edit);
  m_config = new QPlainTextEdit(this);
  m_config->setObjectName(QStringLiteral("mcpJson"));
  m_config->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  m_config->setPlaceholderText(QString::fromUtf8(kExample));
  m_config->setMinimumHeight(140);
  edit->setBuddy(m_config);
  v->addWidget(m_config, 1);
  m_saved = new QLabel(this);
  m_saved->setWordWrap(true);
  v->addWidget(m_saved);

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
  QPushButton* save = buttons->addButton(tr("Save and restart servers"), QDialogButtonBox::ApplyRole);
  save->setObjectName(QStringLiteral("saveMcpJson"));
  connect(save, &QPushButton::clicked, this, &ToolServersDialog::saveConfig);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  v->addWidget(buttons);

  connect(&m_servers, &McpServers::changed, this, &ToolServersDialog::showServers);
  loadConfig();
  showServers();
  resize(720, 620);
}

void ToolServersDialog::showServers() {
  const QSignalBlocker quiet(m_tree);  // the checkboxes are set, not changed by the user
  m_tree->clear();
  for (const McpConnection* server : m_servers.connections()) {
    auto* item = new QTreeWidgetItem(m_tree);
    item->setText(0, server->name());
    switch (server->state()) {
      case McpConnection::State::Ready:
        item->setText(1, server->tools().size() == 1 ? tr("ready · 1 tool") : tr("ready · %1 tools").arg(server->tools().size()));
        break;
      case McpConnection::State::Starting: item->setText(1, tr("starting…")); break;
      case McpConnection::State::Off: item->setText(1, tr("off (\"disabled\" in mcp.json)")); break;
      case McpConnection::State::Failed:
        item->setText(1, server->failure());
        item->setForeground(1, textColors().error);
        break;
    }
    item->setToolTip(1, item->text(1));
    for (const auto& tool : server->tools()) {
      auto* t = new QTreeWidgetItem(item);
      t->setText(0, QString::fromStdString(tool.name));
      t->setText(1, QString::fromStdString(tool.description).simplified());
      t->setToolTip(1, QString::fromStdString(tool.description));
      t->setFlags(t->flags() | Qt::ItemIsUserCheckable);
      t->setCheckState(2, m_servers.alwaysAllowed(server->name(), t->text(0)) ? Qt::Checked : Qt::Unchecked);
    }
    item->setExpanded(true);
  }
  const QStringList problems = m_servers.problems();
  m_problems->setVisible(!problems.isEmpty() || m_servers.connections().isEmpty());
  if (!problems.isEmpty()) {
    QPalette p = m_problems->palette();
    p.setColor(QPalette::WindowText, textColors().error);
    m_problems->setPalette(p);
    m_problems->setText(tr("mcp.json: %1").arg(problems.join(QStringLiteral("; "))));
  } else {
    m_problems->setPalette(QPalette());
    m_problems->setText(tr("No servers yet: write them below (the example shows both kinds) and save."));
  }
}

void ToolServersDialog::loadConfig() {
  QFile f(m_servers.configPath());
  m_config->setPlainText(f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.read(1 << 20)) : QString());
}

void ToolServersDialog::saveConfig() {
  QString error;
  QDir().mkpath(QFileInfo(m_servers.configPath()).absolutePath());
  // The user's alone: an entry's env or headers may hold a key.
  if (!saveFile(m_servers.configPath(), m_config->toPlainText().toUtf8(), &error, QFileDevice::ReadOwner | QFileDevice::WriteOwner)) {
    m_saved->setText(tr("Not saved: %1").arg(error));
    return;
  }
  m_servers.reload();
  m_saved->setText(m_servers.problems().isEmpty() ? tr("Saved; the servers whose entry changed are restarting.")
                                                  : tr("Saved, with problems (above): the entries at fault are left out."));
}
