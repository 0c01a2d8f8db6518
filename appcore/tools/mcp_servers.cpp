// McpServers: mcp.json in, connections and the tools they offer out, consent kept on disk.
#include "appcore/tools/mcp_servers.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QStandardPaths>

#include "appcore/io/save_file.h"
#include "appcore/tools/mcp_connection.h"
#include "mcp/mcp_config.h"

using namespace pagedchat;

namespace {

constexpr qint64 kMaxConfigBytes = 1 << 20;

bool same_config(const mcp::ServerConfig& a, const mcp::ServerConfig& b) {
  return a.name == b.name && a.stdio.command == b.stdio.command && a.stdio.args == b.stdio.args &&
         a.stdio.env == b.stdio.env && a.url == b.url && a.headers == b.headers && a.disabled == b.disabled;
}

QString function_name(const QString& server, const QString& tool) {
  QString name = server + QLatin1Char('_') + tool;
  name.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9_-]")), QStringLiteral("_"));
  return name.left(64);
}

}  // namespace

McpServers::McpServers(QString configDir, QObject* parent) : QObject(parent), m_dir(std::move(configDir)) {
  loadConsent();
  reload();
}

McpServers::~McpServers() { qDeleteAll(m_connections); }

QString McpServers::defaultConfigDir() { return QStandardPaths::writableLocation(QStandardPaths::AppConfigLocation); }

QString McpServers::configPath() const { return QDir(m_dir).filePath(QStringLiteral("mcp.json")); }

McpConnection* McpServers::connection(const QString& server) const {
  for (McpConnection* c : m_connections)
    if (c->name() == server) return c;
  return nullptr;
}

void McpServers::reload() {
  m_problems.clear();
  mcp::Config config;
  QFile file(configPath());
  if (file.exists()) {
    if (!file.open(QIODevice::ReadOnly)) {
      m_problems << tr("%1 cannot be read: %2").arg(configPath(), file.errorString());
    } else if (file.size() > kMaxConfigBytes) {
      m_problems << tr("%1 is over 1 MiB; it was not read").arg(configPath());
    } else {
      config = mcp::parse_mcp_config(file.readAll().toStdString());
      for (const std::string& p : config.problems) m_problems << QString::fromStdString(p);
    }
  }
  QVector<McpConnection*> kept;
  for (const mcp::ServerConfig& s : config.servers) {
    McpConnection* old = connection(QString::fromStdString(s.name));
    if (old && same_config(old->config(), s)) {
      kept << old;
      m_connections.removeOne(old);
      continue;
    }
    auto* c = new McpConnection(s, this);
    connect(c, &McpConnection::stateChanged, this, &McpServers::changed);
    kept << c;
    c->start();
  }
  qDeleteAll(m_connections);  // those gone from the file, or changed: their servers end
  m_connections = kept;
  emit changed();
}

QVector<McpServers::Offer> McpServers::offers(const QStringList& servers) const {
  QVector<Offer> out;
  QSet<QString> taken;
  for (McpConnection* c : m_connections) {
    if (c->state() != McpConnection::State::Ready || (!servers.isEmpty() && !servers.contains(c->name()))) continue;
    for (int i = 0; i < static_cast<int>(c->tools().size()); ++i) {
      const QString own = QString::fromStdString(c->tools()[i].name);
      QString name = own;
      if (taken.contains(name) || name.contains(QRegularExpression(QStringLiteral("[^A-Za-z0-9_-]"))) || name.size() > 64)
        name = function_name(c->name(), own);
      if (taken.contains(name)) continue;  // two servers whose names sanitize alike: the first keeps it
      taken.insert(name);
      out.push_back({name, c, i});
    }
  }
  return out;
}

QString McpServers::toolsJson(const QStringList& servers) const {
  QJsonArray tools;
  for (const Offer& o : offers(servers)) {
    const mcp::Tool& t = o.connection->tools()[o.tool];
    QJsonObject function{{QStringLiteral("name"), o.function},
                         {QStringLiteral("description"), QString::fromStdString(t.description)},
                         {QStringLiteral("parameters"),
                          QJsonDocument::fromJson(QByteArray::fromStdString(t.input_schema)).object()}};
    tools.append(QJsonObject{{QStringLiteral("type"), QStringLiteral("function")}, {QStringLiteral("function"), function}});
  }
  return QString::fromUtf8(QJsonDocument(tools).toJson(QJsonDocument::Compact));
}

McpServers::Target McpServers::resolve(const QString& functionName, const QStringList& servers) const {
  for (const Offer& o : offers(servers))
    if (o.function == functionName) return {o.connection, QString::fromStdString(o.connection->tools()[o.tool].name)};
  return {};
}

bool McpServers::alwaysAllowed(const QString& server, const QString& tool) const {
  return m_allowed.contains(server + QLatin1Char('\t') + tool);
}

void McpServers::setAlwaysAllowed(const QString& server, const QString& tool, bool allowed) {
  const QString key = server + QLatin1Char('\t') + tool;
  if (allowed == m_allowed.contains(key)) return;
  if (allowed) m_allowed.insert(key);
  else m_allowed.remove(key);
  saveConsent();
}

void McpServers::loadConsent() {
  QFile file(QDir(m_dir).filePath(QStringLiteral("mcp-consent.json")));
  if (!file.open(QIODevice::ReadOnly) || file.size() > kMaxConfigBytes) return;
  const QJsonObject root = QJsonDocument::fromJson(file.readAll()).object();
  const QJsonObject servers = root.value(QStringLiteral("alwaysAllow")).toObject();
  for (auto it = servers.begin(); it != servers.end(); ++it)
    for (const QJsonValue& tool : it.value().toArray()) m_allowed.insert(it.key() + QLatin1Char('\t') + tool.toString());
}

void McpServers::saveConsent() const {
  QJsonObject servers;
  for (const QString& key : m_allowed) {
    const QString server = key.section(QLatin1Char('\t'), 0, 0), tool = key.section(QLatin1Char('\t'), 1);
    QJsonArray tools = servers.value(server).toArray();
    tools.append(tool);
    servers[server] = tools;
  }
  QDir().mkpath(m_dir);
  QString why;
  if (!saveFile(QDir(m_dir).filePath(QStringLiteral("mcp-consent.json")),
                QJsonDocument(QJsonObject{{QStringLiteral("alwaysAllow"), servers}}).toJson(), &why))
    qWarning("MCP: the consent could not be saved: %s", qPrintable(why));
}
