// Remote engines in the window: File > Remote engines (the dialog), and Chat > Run this chat on
// (this machine, or a model of a remote server), which the chat keeps from its next turn on.
#include <QActionGroup>
#include <QMenu>
#include <QUrl>

#include "ui/chat_list/chat_list_widget.h"

#include "ui/chat/chat_controller.h"
#include "ui/remote/remote_endpoints.h"
#include "ui/remote/remote_engines_dialog.h"
#include "ui/shell/main_window.h"

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
