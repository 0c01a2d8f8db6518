// The main window's model, settings and local-API parts: File menu (open, recent, settings),
// applying settings, the compare columns dialog, and the Serve API toggle.
#include "ui/shell/main_window.h"

#include <QAction>
#include <QCheckBox>
#include <QFileInfo>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QStatusBar>
#include <QToolBar>

#include "models/model_paths.h"
#include "appcore/chat/chat_database.h"
#include "ui/dialogs/compare_settings_dialog.h"
#include "appcore/bridge/engine_bridge.h"
#include "ui/shell/model_loader.h"
#include "ui/dialogs/settings_dialog.h"
#ifdef PAGEDCHAT_HAVE_SERVER
#include "appcore/bridge/local_api_server.h"
#endif

namespace {
const QString kApiEnabledKey = QStringLiteral("api_server_enabled");  // "1" or "0"
const QString kApiPortKey = QStringLiteral("api_server_port");
}  // namespace

void MainWindow::loadModel(const QString& path, int threads) {
  m_status->setText(tr("Loading %1…").arg(path));
  EngineBridge::Config config = m_session.settings().engineConfig();
  if (threads >= 0) config.threads = threads;
  m_loader->load(path, config);
}

void MainWindow::applySettings(const AppSettings& settings) {
  const bool reload = !settings.sameEngine(m_session.settings()) && !m_loader->currentPath().isEmpty();
  if (reload) m_status->setText(tr("Loading %1…").arg(m_loader->currentPath()));
  m_session.applySettings(settings);  // saved; the model reloaded when the engine changed
}

void MainWindow::showSettings() {
  auto* dialog = new SettingsDialog(m_session.settings(), EngineBridge::cudaAvailable(), this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  connect(dialog, &QDialog::accepted, this, [this, dialog] { applySettings(dialog->settings()); });
  dialog->open();
}

void MainWindow::showCompareColumns() {
  auto* dialog = new CompareSettingsDialog(m_session.settings().compareColumns, this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  connect(dialog, &QDialog::accepted, this, [this, dialog] {
    AppSettings s = m_session.settings();
    s.compareColumns = dialog->columns();
    applySettings(s);
    m_varySettings->setChecked(true);
  });
  dialog->open();
}

void MainWindow::buildFileMenu() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* open = file->addAction(tr("&Open model…"), this, [this] {
    m_loader->chooseAndLoad(m_session.settings().engineConfig(), QString::fromStdString(pagedchat::default_model_path()));
  });
  open->setShortcut(QKeySequence::Open);
  QAction* library = file->addAction(tr("Model &library…"), this, &MainWindow::showModelLibrary);
  library->setObjectName(QStringLiteral("modelLibraryAction"));
  library->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_L));
  m_recentMenu = file->addMenu(tr("Open &recent"));
  m_recentMenu->setObjectName(QStringLiteral("recentModels"));
  connect(m_loader, &ModelLoader::recentModelsChanged, this, &MainWindow::fillRecentMenu);
  fillRecentMenu();
  QAction* remote = file->addAction(tr("Remote &engines…"), this, &MainWindow::showRemoteEngines);
  remote->setObjectName(QStringLiteral("remoteEnginesAction"));
  file->addSeparator();
  QAction* settings = file->addAction(tr("&Settings…"), this, &MainWindow::showSettings);
  settings->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Comma));
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);
}

void MainWindow::fillRecentMenu() {
  m_recentMenu->clear();
  for (const QString& path : m_loader->recentModels())
    m_recentMenu->addAction(QFileInfo(path).fileName(), this, [this, path] { loadModel(path); })->setToolTip(path);
  m_recentMenu->setEnabled(!m_recentMenu->isEmpty());
}

// The local API: a checkable "Serve API" action and the URL in the status bar.
void MainWindow::buildApiServer(QToolBar* toolBar) {
  m_apiLabel = new QLabel(this);
  m_apiLabel->setObjectName(QStringLiteral("apiServerUrl"));
  m_apiLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
  statusBar()->addPermanentWidget(m_apiLabel);
#ifdef PAGEDCHAT_HAVE_SERVER
  m_apiLabel->setText(tr("API: off"));
  m_apiAction = toolBar->addAction(tr("Serve API"));
  m_apiAction->setObjectName(QStringLiteral("serveApi"));
  m_apiAction->setCheckable(true);
  m_apiAction->setToolTip(tr("Serve the OpenAI-compatible API on 127.0.0.1 from this app's engine: API requests batch with "
                             "the chats and show in the KV block view"));
  connect(m_apiAction, &QAction::toggled, this, &MainWindow::setApiServerEnabled);
  connect(m_api, &LocalApiServer::started, this, [this](const QString& url) {
    m_apiLabel->setText(tr("API: %1").arg(url));
    emit apiServerChanged(url, QString());
  });
  connect(m_api, &LocalApiServer::failed, this, [this](const QString& error) {
    m_apiLabel->setText(tr("API: off"));
    m_status->setText(tr("The API server did not start: %1").arg(error));
    const QSignalBlocker block(m_apiAction);
    m_apiAction->setChecked(false);
    emit apiServerChanged(QString(), error);
  });
#else
  Q_UNUSED(toolBar);
#endif
}

void MainWindow::setApiServerEnabled(bool on) {
#ifndef PAGEDCHAT_HAVE_SERVER
  Q_UNUSED(on);
#else
  if (!m_api) return;
  {
    const QSignalBlocker block(m_apiAction);
    m_apiAction->setChecked(on);
  }
  m_db->setSetting(kApiEnabledKey, on ? QStringLiteral("1") : QStringLiteral("0"));
  if (!on) {
    m_api->stop();
    m_apiLabel->setText(tr("API: off"));
    emit apiServerChanged(QString(), QString());
    return;
  }
  ServerOptions options;
  options.port = static_cast<quint16>(m_db->setting(kApiPortKey, QStringLiteral("8080")).toUInt());
  options.apiKey = qEnvironmentVariable("PAGEDCHAT_API_KEY");
  m_apiLabel->setText(tr("API: starting…"));
  m_api->start(options);
#endif
}

void MainWindow::restoreApiServer() {
  if (m_db->setting(kApiEnabledKey) == QLatin1String("1")) setApiServerEnabled(true);
}

void MainWindow::setApiPort(int port) { m_db->setSetting(kApiPortKey, QString::number(port)); }

QString MainWindow::apiServerUrl() const {
#ifdef PAGEDCHAT_HAVE_SERVER
  if (m_api) return m_api->url();
#endif
  return QString();
}
