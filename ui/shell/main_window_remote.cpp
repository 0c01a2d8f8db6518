// Remote engines in the window: File > Remote engines (the dialog), and Chat > Run this chat on
// (this machine, or a model of a remote server), which the chat keeps from its next turn on.
#include <QActionGroup>
#include <QDockWidget>
#include <QLabel>
#include <QCoreApplication>
#include <QMenu>
#include <QPointer>
#include <QThreadPool>
#include <QUrl>

#include "ui/chat_list/chat_list_widget.h"

#include "remote/openai_client.h"
#include "ui/chat/chat_controller.h"
#include "ui/remote/remote_endpoints.h"
#include "ui/remote/remote_engines_dialog.h"
#include "ui/remote/remote_pool_watcher.h"
#include "ui/pool_panel/kv_pool_panel.h"
#include "ui/shell/main_window.h"
#include "ui/shell/status_line.h"

void MainWindow::showRemoteEngines() {
  auto* dialog = new RemoteEnginesDialog(*m_remoteEndpoints, this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  dialog->open();
}

bool MainWindow::setChatEngine(ChatId id, const RemoteEngineChoice& engine) {
  const bool ok = m_chats->setRemoteEngine(id, engine);
  if (ok) m_list->setRemoteHost(id, engine.isSet() ? QUrl(engine.url).authority() : QString());
  if (id == m_current) updateControls();
  return ok;
}

void MainWindow::fillRunOnMenu(QMenu* menu) {
  menu->clear();
  const ChatController::Chat* c = current();
  const RemoteEngineChoice now = c ? c->record.remote : RemoteEngineChoice{};
  auto* group = new QActionGroup(menu);
  auto choice = [&](const QString& text, const RemoteEngineChoice& engine) {
    QAction* a = menu->addAction(text, this, [this, engine] { setChatEngine(m_current, engine); });
    a->setCheckable(true);
    a->setChecked(engine == now);
    a->setEnabled(c && !c->replying && !c->awaitingPick);
    group->addAction(a);
    return a;
  };
  choice(tr("This machine"), {})->setObjectName(QStringLiteral("runOnLocal"));
  for (const RemoteEndpointEntry& e : m_remoteEndpoints->entries()) {
    menu->addSection(e.url);
    for (const QString& model : e.models) choice(model, {e.url, model})->setToolTip(tr("%1 at %2").arg(model, e.url));
  }
  menu->addSeparator();
  menu->addAction(tr("Remote engines…"), this, &MainWindow::showRemoteEngines);
}

QString MainWindow::watchedPool() const { return m_poolWatcher && m_poolWatcher->isWatching() ? m_poolWatcher->url() : QString(); }

void MainWindow::watchPool(const QString& url) {
  auto* panel = findChild<KvPoolPanel*>(QStringLiteral("kvPoolPanel"));
  auto* dock = findChild<QDockWidget*>(QStringLiteral("kvBlocksDock"));
  if (!panel || !dock) return;
  if (!m_poolWatcher) {
    m_poolWatcher = new RemotePoolWatcher(this);
    connect(m_poolWatcher, &RemotePoolWatcher::frame, panel, &KvPoolPanel::setFrame);
    connect(m_poolWatcher, &RemotePoolWatcher::stopped, this, [this](const QString& why) {
      if (why.isEmpty()) return;  // the user's own switch
      watchPool(QString());
      m_status->setText(tr("The remote pool is no longer shown: %1").arg(why));
    });
  }
  m_poolWatcher->stop();
  // One pool at a time in the view: this machine's frames stop reaching it while a remote one is drawn.
  disconnect(this, &MainWindow::poolFrame, panel, &KvPoolPanel::setFrame);
  if (url.isEmpty()) {
    connect(this, &MainWindow::poolFrame, panel, &KvPoolPanel::setFrame);
    dock->setWindowTitle(tr("KV blocks"));
    return;
  }
  dock->setWindowTitle(tr("KV blocks of %1").arg(QUrl(url).authority()));
  m_poolWatcher->start(url, m_remoteEndpoints->apiKey(url));
}

void MainWindow::fillWatchPoolMenu(QMenu* menu) {
  menu->clear();
  auto* group = new QActionGroup(menu);
  const QString now = watchedPool();
  auto choice = [&](const QString& text, const QString& url) {
    QAction* a = menu->addAction(text, this, [this, url] { watchPool(url); });
    a->setCheckable(true);
    a->setChecked(url == now);
    group->addAction(a);
    return a;
  };
  choice(tr("This machine's pool"), QString());
  for (const RemoteEndpointEntry& e : m_remoteEndpoints->entries()) choice(e.url, e.url)->setToolTip(tr("A PagedChat server's pool (pagedchat-server)"));
  menu->addSeparator();
  menu->addAction(tr("Remote engines…"), this, &MainWindow::showRemoteEngines);
}

bool MainWindow::controlWatchedPool(const char* action, int steps) {
  const QString url = watchedPool();
  if (url.isEmpty()) return false;
  QPointer<MainWindow> self(this);
  const std::string key = m_remoteEndpoints->apiKey(url).toStdString();
  // Blocking (a round trip): off the UI thread, one request at a time, in the order clicked
  // (pause, step, resume must reach the server as given); only a refusal comes back.
  if (!m_poolControl) {
    m_poolControl = new QThreadPool(this);
    m_poolControl->setMaxThreadCount(1);
  }
  m_poolControl->start([self, url, key, action = std::string(action), steps] {
    const pagedchat::remote::RemoteError e = pagedchat::remote::control_pool({url.toStdString(), key}, action, steps);
    if (e.ok()) return;
    QMetaObject::invokeMethod(qApp, [self, why = QString::fromStdString(e.sentence())] {
      if (self) self->m_status->setText(tr("The remote engine was not stepped: %1").arg(why));
    }, Qt::QueuedConnection);
  });
  return true;
}
