// "Serve API": the local server on, off, and where it listens.
#include "ui/shell/api_server_switch.h"

#include <QAction>
#include <QLabel>
#include <QMenu>
#include <QSignalBlocker>
#include <QStatusBar>
#include <QToolButton>

#include "appcore/chat/chat_database.h"
#ifdef PAGEDCHAT_HAVE_SERVER
#include "appcore/bridge/local_api_server.h"
#include "ui/dialogs/api_request_log_dialog.h"
#endif

namespace {
const QString kApiEnabledKey = QStringLiteral("api_server_enabled");  // "1" or "0"
const QString kApiPortKey = QStringLiteral("api_server_port");
}  // namespace

ApiServerSwitch::ApiServerSwitch(LocalApiServer* server, ChatDatabase& db, QStatusBar* statusBar, QObject* parent)
    : QObject(parent), m_server(server), m_db(db) {
  m_label = new QLabel(statusBar);
  m_label->setObjectName(QStringLiteral("apiServerUrl"));
  m_label->setTextInteractionFlags(Qt::TextSelectableByMouse);
  statusBar->addPermanentWidget(m_label);
#ifdef PAGEDCHAT_HAVE_SERVER
  m_label->setText(tr("API: off"));
  m_action = new QAction(tr("Serve API"), statusBar);
  m_action->setObjectName(QStringLiteral("serveApi"));
  m_action->setCheckable(true);
  m_action->setToolTip(tr("Serve the OpenAI-compatible API on 127.0.0.1 from this app's engine: API requests batch with "
                          "the chats and show in the KV block view"));
  auto* button = new QToolButton(statusBar);
  button->setObjectName(QStringLiteral("serveApiButton"));
  button->setDefaultAction(m_action);
  button->setAutoRaise(true);
  auto* menu = new QMenu(button);
  QAction* log = menu->addAction(tr("Request log…"), this, &ApiServerSwitch::showRequestLog);
  log->setObjectName(QStringLiteral("apiRequestLogAction"));
  button->setMenu(menu);
  button->setPopupMode(QToolButton::MenuButtonPopup);
  statusBar->addPermanentWidget(button);
  connect(m_action, &QAction::toggled, this, &ApiServerSwitch::setEnabled);
  if (!m_server) return;
  connect(m_server, &LocalApiServer::started, this, [this](const QString& url) {
    m_label->setText(tr("API: %1").arg(url));
    emit changed(url, QString());
  });
  connect(m_server, &LocalApiServer::failed, this, [this](const QString& error) {
    m_label->setText(tr("API: off"));
    const QSignalBlocker quiet(m_action);
    m_action->setChecked(false);
    emit changed(QString(), error);
  });
#endif
}

void ApiServerSwitch::setEnabled(bool on) {
#ifndef PAGEDCHAT_HAVE_SERVER
  Q_UNUSED(on);
#else
  if (!m_server) return;
  {
    const QSignalBlocker quiet(m_action);
    m_action->setChecked(on);
  }
  m_db.setSetting(kApiEnabledKey, on ? QStringLiteral("1") : QStringLiteral("0"));
  if (!on) {
    m_server->stop();
    m_label->setText(tr("API: off"));
    emit changed(QString(), QString());
    return;
  }
  ServerOptions options;
  options.port = static_cast<quint16>(m_db.setting(kApiPortKey, QStringLiteral("8080")).toUInt());
  options.apiKey = qEnvironmentVariable("PAGEDCHAT_API_KEY");
  m_label->setText(tr("API: starting…"));
  m_server->start(options);
#endif
}

void ApiServerSwitch::showRequestLog() {
#ifdef PAGEDCHAT_HAVE_SERVER
  if (!m_server) return;
  if (!m_requestLog) {
    auto* dialog = new ApiRequestLogDialog(*m_server, m_label->window());
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QObject::destroyed, this, [this] { m_requestLog = nullptr; });
    m_requestLog = dialog;
  }
  m_requestLog->show();
  m_requestLog->raise();
  m_requestLog->activateWindow();
#endif
}

void ApiServerSwitch::restore() {
  if (m_db.setting(kApiEnabledKey) == QLatin1String("1")) setEnabled(true);
}

void ApiServerSwitch::setPort(int port) { m_db.setSetting(kApiPortKey, QString::number(port)); }

QString ApiServerSwitch::url() const {
#ifdef PAGEDCHAT_HAVE_SERVER
  if (m_server) return m_server->url();
#endif
  return QString();
}
