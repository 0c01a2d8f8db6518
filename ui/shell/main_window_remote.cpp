// Remote engines in the window: File > Remote engines (the dialog), and Chat > Run this chat on
// (this machine, or a model of a remote server), which the chat keeps from its next turn on.
#include <QActionGroup>
#include <QDockWidget>
#include <QInputDialog>
#include <QLineEdit>
#include <QLabel>
#include <QCoreApplication>
#include <QMenu>
#include <QPointer>
#include <QThreadPool>
#include <QUrl>

#include "ui/chat_list/chat_list_widget.h"

#include "remote/openai_client.h"
#include "remote/pool_client.h"
#include "appcore/session/chat_controller.h"
#include "appcore/bridge/engine_bridge.h"
#include "appcore/chat/chat_database.h"
#include "appcore/remote/remote_endpoints.h"
#include "ui/remote/remote_engines_dialog.h"
#include "appcore/remote/remote_pool_watcher.h"
#include "appcore/remote/vllm_pool_watcher.h"
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

void MainWindow::showPoolOf(const QString& title) {
  auto* panel = findChild<KvPoolPanel*>(QStringLiteral("kvPoolPanel"));
  auto* dock = findChild<QDockWidget*>(QStringLiteral("kvBlocksDock"));
  if (!panel || !dock) return;
  // One pool at a time in the view: this machine's frames stop reaching it while a remote one is drawn.
  disconnect(this, &MainWindow::poolFrame, panel, &KvPoolPanel::setFrame);
  panel->selectSequence(-1);  // a sequence of the other pool means nothing in this one
  if (title.isEmpty()) {
    // Nothing of the other pool stays drawn: an empty pool until this machine's next frame
    // (none comes while no model is loaded).
    panel->setFrame(PoolFrame{});
    connect(this, &MainWindow::poolFrame, panel, &KvPoolPanel::setFrame);
    // This pool as it is now, not the other's last picture (on the engine thread, as every bridge call).
    if (m_bridge) QMetaObject::invokeMethod(m_bridge, &EngineBridge::sendFrame, Qt::QueuedConnection);
  }
  dock->setWindowTitle(title.isEmpty() ? tr("KV blocks") : title);
  emit poolShownChanged();
}

// The pool shown is left as this app found it: unpaused, and a server whose pool a lesson
// reset gets its own pool back (at once, or once its requests have ended). The toolbar starts
// unpaused on the next pool: it steps only the pool shown.
void MainWindow::leaveShownPool() {
  QAction* pause = findChild<QAction*>(QStringLiteral("pauseEngine"));
  if (pause && pause->isChecked()) pause->setChecked(false);  // the pool still shown resumes (setEnginePaused)
  giveLessonPoolBack();
}

// The window going: the watched server is left unpaused, in its own pool (the step requests'
// worker is waited for as the window's child). This machine's engine goes with the window.
void MainWindow::leaveWatchedPoolForGood() {
  if (watchedPool().isEmpty()) return;
  QAction* pause = findChild<QAction*>(QStringLiteral("pauseEngine"));
  if (pause && pause->isChecked()) controlWatchedPool("resume", 1);
  giveLessonPoolBack();
}

void MainWindow::giveLessonPoolBack() {
  if (!m_lessonPoolOf.isEmpty() && m_lessonPoolOf == watchedPool())
    sendToWatchedPool([](const pagedchat::remote::Endpoint& e) { return pagedchat::remote::reset_pool(e, {}); });
  m_lessonPoolOf.clear();
}

void MainWindow::watchPool(const QString& url) {
  if (url != watchedPool() || !watchedVllmPool().isEmpty()) leaveShownPool();
  if (m_vllmWatcher) m_vllmWatcher->stop();
  if (!m_poolWatcher) {
    m_poolWatcher = new RemotePoolWatcher(this);
    connect(m_poolWatcher, &RemotePoolWatcher::frame, this, &MainWindow::showRemoteFrame);
    connect(m_poolWatcher, &RemotePoolWatcher::stopped, this, [this](const QString& why) {
      if (why.isEmpty()) return;  // the user's own switch
      watchPool(QString());
      m_status->setText(tr("The remote pool is no longer shown: %1").arg(why));
    });
  }
  m_poolWatcher->stop();
  showPoolOf(url.isEmpty() ? QString() : tr("KV blocks of %1").arg(QUrl(url).authority()));
  if (!url.isEmpty()) m_poolWatcher->start(url, m_remoteEndpoints->apiKey(url));
}

QString MainWindow::watchedVllmPool() const { return m_vllmWatcher && m_vllmWatcher->isWatching() ? m_vllmWatcher->endpoint() : QString(); }

void MainWindow::watchVllmPool(const QString& endpoint, const QString& replay) {
  if (endpoint.isEmpty()) return watchPool(QString());
  leaveShownPool();
  if (m_poolWatcher) m_poolWatcher->stop();
  if (!m_vllmWatcher) {
    m_vllmWatcher = new VllmPoolWatcher(this);
    connect(m_vllmWatcher, &VllmPoolWatcher::frame, this, [this](const PoolFrame& f) {
      if (auto* panel = findChild<KvPoolPanel*>(QStringLiteral("kvPoolPanel"))) panel->setFrame(f);
    });
    connect(m_vllmWatcher, &VllmPoolWatcher::note, this, [this](const QString& sentence) { m_status->setText(sentence); });
    connect(m_vllmWatcher, &VllmPoolWatcher::stopped, this, [this](const QString& why) {
      if (why.isEmpty()) return;
      watchPool(QString());
      m_status->setText(tr("vLLM's KV events are no longer shown: %1").arg(why));
    });
  }
  showPoolOf(tr("KV blocks of vLLM at %1").arg(QUrl(endpoint).authority().isEmpty() ? endpoint : QUrl(endpoint).authority()));
  // A fresh picture: the cache as the events tell it from now on (and what the replay still has).
  if (auto* panel = findChild<KvPoolPanel*>(QStringLiteral("kvPoolPanel"))) panel->setFrame(VllmPoolWatcher::frameOf({}, {}, 0));
  m_vllmWatcher->start(endpoint, replay);
  m_db->setSetting(QStringLiteral("remote/vllm_kv_events"), (endpoint + QLatin1Char(' ') + replay).trimmed());
}

void MainWindow::askVllmPool() {
  const QString last = m_db->setting(QStringLiteral("remote/vllm_kv_events"), QStringLiteral("tcp://127.0.0.1:5557"));
  bool ok = false;
  const QString given = QInputDialog::getText(
      this, tr("Watch vLLM's KV events"),
      tr("The address vLLM publishes its KV cache events on\n(its --kv-events-config endpoint, e.g. tcp://gpu-box:5557),\n"
         "then its replay address after a space, if it has one:"),
      QLineEdit::Normal, last, &ok).trimmed();
  if (!ok || given.isEmpty()) return;
  const QStringList parts = given.split(QLatin1Char(' '), Qt::SkipEmptyParts);
  watchVllmPool(parts.value(0), parts.value(1));
}

// A remote pool's frame drawn: the sequences of this app's own requests there carry their chat's
// name and colour, as on this machine's pool (the others stay "request N").
void MainWindow::showRemoteFrame(PoolFrame frame) {
  const QString url = watchedPool();
  for (PoolFrameSequence& s : frame.sequences) {
    if (s.responseId.isEmpty()) continue;
    const auto it = m_remoteRequests.constFind(url + QLatin1Char(' ') + s.responseId);
    if (it == m_remoteRequests.constEnd()) continue;
    if (const ChatRecord* c = chat(*it)) {
      s.chatTitle = c->title.isEmpty() ? tr("chat %1").arg(*it) : c->title;
      s.colorIndex = static_cast<int>(*it % 1000);
    }
  }
  if (auto* panel = findChild<KvPoolPanel*>(QStringLiteral("kvPoolPanel"))) panel->setFrame(frame);
  emit remotePoolFrame(frame);
}

void MainWindow::fillWatchPoolMenu(QMenu* menu) {
  menu->clear();
  auto* group = new QActionGroup(menu);
  const QString now = watchedPool();
  const bool vllmNow = !watchedVllmPool().isEmpty();
  auto choice = [&](const QString& text, const QString& url) {
    QAction* a = menu->addAction(text, this, [this, url] { watchPool(url); });
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

bool MainWindow::controlWatchedPool(const char* action, int steps) {
  return sendToWatchedPool([action = std::string(action), steps](const pagedchat::remote::Endpoint& e) {
    return pagedchat::remote::control_pool(e, action, steps);
  });
}

bool MainWindow::resetWatchedPool(int numBlocks, int numHostBlocks, int blockSize, int maxContext, int stepTokens) {
  if (numBlocks > 0 && !watchedPool().isEmpty()) m_lessonPoolOf = watchedPool();
  return sendToWatchedPool([shape = pagedchat::remote::RemotePoolShape{numBlocks, numHostBlocks, blockSize, maxContext, stepTokens}](
                               const pagedchat::remote::Endpoint& e) { return pagedchat::remote::reset_pool(e, shape); });
}

bool MainWindow::sendToWatchedPool(std::function<pagedchat::remote::RemoteError(const pagedchat::remote::Endpoint&)> command) {
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
  m_poolControl->start([self, url, key, command = std::move(command)] {
    const pagedchat::remote::RemoteError e = command({url.toStdString(), key});
    if (e.ok()) return;
    QMetaObject::invokeMethod(qApp, [self, why = QString::fromStdString(e.sentence())] {
      if (self) self->m_status->setText(tr("The remote engine was not stepped: %1").arg(why));
    }, Qt::QueuedConnection);
  });
  return true;
}
