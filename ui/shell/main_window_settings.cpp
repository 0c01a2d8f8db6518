// The main window's model and settings parts: File menu (open, recent, settings), applying
// settings, the compare columns and chat sampling dialogs.
#include "ui/shell/main_window.h"

#include <QAction>
#include <QFileInfo>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>

#include "models/model_paths.h"
#include "appcore/chat/chat_database.h"
#include "ui/chat/chat_panel.h"
#include "ui/dialogs/chat_sampling_dialog.h"
#include "ui/dialogs/compare_settings_dialog.h"
#include "appcore/bridge/engine_bridge.h"
#include "ui/shell/model_loader.h"
#include "ui/dialogs/settings_dialog.h"
#include "ui/dialogs/tool_servers_dialog.h"
#include "ui/remote/remote_menus.h"

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

void MainWindow::showToolServers() {
  if (!m_chats->tools()) return;
  if (auto* open = findChild<ToolServersDialog*>()) return open->raise();  // one at a time
  auto* dialog = new ToolServersDialog(*m_chats->tools(), this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  dialog->open();
}

void MainWindow::showCompareColumns() {
  auto* dialog = new CompareSettingsDialog(m_session.settings().compareColumns, this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  connect(dialog, &QDialog::accepted, this, [this, dialog] {
    AppSettings s = m_session.settings();
    s.compareColumns = dialog->columns();
    applySettings(s);
    m_chatPanel->setVarySettings(true);
  });
  dialog->open();
}

void MainWindow::setChatSampling(ChatId id, const std::optional<TurnSettings>& sampling) {
  m_chats->setChatSampling(id, sampling);
  updateControls();
}

void MainWindow::showChatSampling() {
  const ChatRecord* r = chat(currentChat());
  if (!r) return;
  auto* dialog = new ChatSamplingDialog(r->title, r->ownSampling, m_session.settings().sampling, this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  connect(dialog, &QDialog::accepted, this, [this, dialog, id = r->id] { setChatSampling(id, dialog->ownSampling()); });
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
  QAction* remote = file->addAction(tr("Remote &engines…"), m_remoteMenus, &RemoteMenus::showRemoteEngines);
  remote->setObjectName(QStringLiteral("remoteEnginesAction"));
  QAction* tools = file->addAction(tr("&Tool servers…"), this, &MainWindow::showToolServers);
  tools->setObjectName(QStringLiteral("toolServersAction"));
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
