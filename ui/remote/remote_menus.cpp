// Where a chat runs and which pool is watched, chosen from the menus.
#include "ui/remote/remote_menus.h"

#include <QActionGroup>
#include <QInputDialog>
#include <QLineEdit>
#include <QMenu>

#include "appcore/remote/remote_endpoints.h"
#include "appcore/session/app_session.h"
#include "appcore/session/chat_controller.h"
#include "appcore/session/pool_control.h"
#include "ui/remote/remote_engines_dialog.h"

RemoteMenus::RemoteMenus(AppSession& session, std::function<ChatId()> chatShown, QWidget* window)
    : QObject(window), m_session(session), m_chatShown(std::move(chatShown)), m_window(window) {}

QMenu* RemoteMenus::addRunOnMenu(QMenu* parent) {
  QMenu* runOn = parent->addMenu(tr("R&un this chat on"));
  runOn->setObjectName(QStringLiteral("runOnMenu"));
  connect(runOn, &QMenu::aboutToShow, this, [this, runOn] { fillRunOn(runOn); });
  return runOn;
}

QMenu* RemoteMenus::addWatchPoolMenu(QMenu* parent) {
  QMenu* watch = parent->addMenu(tr("&Watch a remote pool"));
  watch->setObjectName(QStringLiteral("watchPoolMenu"));
  connect(watch, &QMenu::aboutToShow, this, [this, watch] { fillWatchPool(watch); });
  return watch;
}

void RemoteMenus::showRemoteEngines() {
  auto* dialog = new RemoteEnginesDialog(m_session.remoteEndpoints(), m_window);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  dialog->open();
}

void RemoteMenus::fillRunOn(QMenu* menu) {
  menu->clear();
  ChatController& chats = m_session.chats();
  const ChatController::Chat* c = chats.chat(m_chatShown());
  const RemoteEngineChoice now = c ? c->record.remote : RemoteEngineChoice{};
  auto* group = new QActionGroup(menu);
  auto choice = [&](const QString& text, const RemoteEngineChoice& engine) {
    // The list and the controls follow the chat's engineChanged.
    QAction* a = menu->addAction(text, this, [this, engine] { m_session.chats().setRemoteEngine(m_chatShown(), engine); });
    a->setCheckable(true);
    a->setChecked(engine == now);
    a->setEnabled(c && !c->replying && !c->awaitingPick);
    group->addAction(a);
    return a;
  };
  choice(tr("This machine"), {})->setObjectName(QStringLiteral("runOnLocal"));
  for (const RemoteEndpointEntry& e : m_session.remoteEndpoints().entries()) {
    menu->addSection(e.url);
    for (const QString& model : e.models) choice(model, {e.url, model})->setToolTip(tr("%1 at %2").arg(model, e.url));
  }
  menu->addSeparator();
  menu->addAction(tr("Remote engines…"), this, &RemoteMenus::showRemoteEngines);
}

void RemoteMenus::askVllmPool() {
  PoolControl& pool = m_session.pool();
  bool ok = false;
  const QString given = QInputDialog::getText(
      m_window, tr("Watch vLLM's KV events"),
      tr("The address vLLM publishes its KV cache events on\n(its --kv-events-config endpoint, e.g. tcp://gpu-box:5557),\n"
         "then its replay address after a space, if it has one:"),
      QLineEdit::Normal, pool.lastVllmPool(), &ok).trimmed();
  if (!ok || given.isEmpty()) return;
  const QStringList parts = given.split(QLatin1Char(' '), Qt::SkipEmptyParts);
  pool.watchVllmPool(parts.value(0), parts.value(1));
}

void RemoteMenus::fillWatchPool(QMenu* menu) {
  menu->clear();
  PoolControl& pool = m_session.pool();
  auto* group = new QActionGroup(menu);
  const QString now = pool.watchedPool();
  const bool vllmNow = !pool.watchedVllmPool().isEmpty();
  auto choice = [&](const QString& text, const QString& url) {
    QAction* a = menu->addAction(text, this, [&pool, url] { pool.watchPool(url); });
    a->setCheckable(true);
    a->setChecked(!vllmNow && url == now);
    group->addAction(a);
    return a;
  };
  choice(tr("This machine's pool"), QString());
  for (const RemoteEndpointEntry& e : m_session.remoteEndpoints().entries())
    choice(e.url, e.url)->setToolTip(tr("A PagedChat server's pool (pagedchat-server)"));
  QAction* vllm = menu->addAction(tr("vLLM KV events…"), this, &RemoteMenus::askVllmPool);
  vllm->setObjectName(QStringLiteral("watchVllmPool"));
  vllm->setCheckable(true);
  vllm->setChecked(vllmNow);
  group->addAction(vllm);
  vllm->setToolTip(tr("The blocks a vLLM server's prefix cache holds, from its KV cache events (ZeroMQ)"));
  menu->addSeparator();
  menu->addAction(tr("Remote engines…"), this, &RemoteMenus::showRemoteEngines);
}
