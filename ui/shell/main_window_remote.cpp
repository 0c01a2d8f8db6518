// Remote engines in the window: File > Remote engines (the dialog), Chat > Run this chat on
// (this machine, or a model of a remote server), which the chat keeps from its next turn on,
// and View > Watch a remote pool, whose choice the session's PoolControl carries out.
#include <QActionGroup>
#include <QDockWidget>
#include <QInputDialog>
#include <QLineEdit>
#include <QLabel>
#include <QCoreApplication>
#include <QMenu>
#include <QUrl>

#include "ui/chat_list/chat_list_widget.h"

#include "appcore/session/chat_controller.h"
#include "appcore/remote/remote_endpoints.h"
#include "ui/remote/remote_engines_dialog.h"
#include "appcore/session/pool_control.h"
#include "ui/shell/main_window.h"

void MainWindow::showRemoteEngines() {
  auto* dialog = new RemoteEnginesDialog(*m_remoteEndpoints, this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  dialog->open();
}

bool MainWindow::setChatEngine(ChatId id, const RemoteEngineChoice& engine) {
  return m_chats->setRemoteEngine(id, engine);  // the list and the controls follow (engineChanged)
}

void MainWindow::fillRunOnMenu(QMenu* menu) {
  menu->clear();
  const ChatController::Chat* c = m_chats->chat(currentChat());
  const RemoteEngineChoice now = c ? c->record.remote : RemoteEngineChoice{};
  auto* group = new QActionGroup(menu);
  auto choice = [&](const QString& text, const RemoteEngineChoice& engine) {
    QAction* a = menu->addAction(text, this, [this, engine] { setChatEngine(currentChat(), engine); });
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

void MainWindow::askVllmPool() {
  const QString last = m_pool->lastVllmPool();
  bool ok = false;
  const QString given = QInputDialog::getText(
      this, tr("Watch vLLM's KV events"),
      tr("The address vLLM publishes its KV cache events on\n(its --kv-events-config endpoint, e.g. tcp://gpu-box:5557),\n"
         "then its replay address after a space, if it has one:"),
      QLineEdit::Normal, last, &ok).trimmed();
  if (!ok || given.isEmpty()) return;
  const QStringList parts = given.split(QLatin1Char(' '), Qt::SkipEmptyParts);
  m_pool->watchVllmPool(parts.value(0), parts.value(1));
}

void MainWindow::fillWatchPoolMenu(QMenu* menu) {
  menu->clear();
  auto* group = new QActionGroup(menu);
  const QString now = m_pool->watchedPool();
  const bool vllmNow = !m_pool->watchedVllmPool().isEmpty();
  auto choice = [&](const QString& text, const QString& url) {
    QAction* a = menu->addAction(text, this, [this, url] { m_pool->watchPool(url); });
    a->setCheckable(true);
    a->setChecked(!vllmNow && url == now);
    group->addAction(a);
    return a;
  };
  choice(tr("This machine's pool"), QString());
  for (const RemoteEndpointEntry& e : m_remoteEndpoints->entries()) choice(e.url, e.url)->setToolTip(tr("A PagedChat server's pool (pagedchat-server)"));
  QAction* vllm = menu->addAction(tr("vLLM KV events…"), this, &MainWindow::askVllmPool);
  vllm->setObjectName(QStringLiteral("watchVllmPool"));
  vllm->setCheckable(true);
  vllm->setChecked(vllmNow);
  group->addAction(vllm);
  vllm->setToolTip(tr("The blocks a vLLM server's prefix cache holds, from its KV cache events (ZeroMQ)"));
  menu->addSeparator();
  menu->addAction(tr("Remote engines…"), this, &MainWindow::showRemoteEngines);
}
