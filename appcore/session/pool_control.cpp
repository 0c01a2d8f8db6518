// Which pool the app shows and steps, and the requests that step a watched server's.
#include "appcore/session/pool_control.h"

#include <QCoreApplication>
#include <QPointer>
#include <QThreadPool>
#include <QUrl>

#include "appcore/bridge/engine_bridge.h"
#include "appcore/chat/chat_database.h"
#include "appcore/remote/remote_bridge.h"
#include "appcore/remote/remote_endpoints.h"
#include "appcore/remote/remote_pool_watcher.h"
#include "appcore/remote/vllm_pool_watcher.h"
#include "appcore/session/chat_controller.h"
#include "remote/pool_client.h"

namespace {
const QString kVllmKey = QStringLiteral("remote/vllm_kv_events");
}

PoolControl::PoolControl(EngineBridge* bridge, const ChatController& chats, ChatDatabase& db, RemoteEndpoints& endpoints,
                         RemoteBridge& remote, QObject* parent)
    : QObject(parent), m_bridge(bridge), m_chats(chats), m_db(db), m_endpoints(endpoints) {
  if (m_bridge) {
    connect(m_bridge, &EngineBridge::poolFrame, this, &PoolControl::nameLocalFrame);
    connect(m_bridge, &EngineBridge::rooflineMeasured, this, [this](double flops, double bandwidth, int threads) {
      emit rooflineMeasured({flops, bandwidth, threads});
    });
  }
  connect(&remote, &RemoteBridge::requestStarted, this, [this](ChatId id, const QString& url, const QString& response) {
    m_remoteRequests.insert(url + QLatin1Char(' ') + response, id);
    emit remoteRequestStarted(id);
  });
}

// This machine's engine goes with the app; the watched server is left as this app found it.
PoolControl::~PoolControl() {
  if (watchedPool().isEmpty()) return;
  if (m_paused) control("resume", 1);
  giveLessonPoolBack();
}  // m_poolControl, a child, waits for its requests as it goes

QString PoolControl::watchedPool() const { return m_poolWatcher && m_poolWatcher->isWatching() ? m_poolWatcher->url() : QString(); }

QString PoolControl::watchedVllmPool() const {
  return m_vllmWatcher && m_vllmWatcher->isWatching() ? m_vllmWatcher->endpoint() : QString();
}

QString PoolControl::lastVllmPool() const { return m_db.setting(kVllmKey, QStringLiteral("tcp://127.0.0.1:5557")); }

// The pool shown is left as this app found it: unpaused, and a server whose pool a lesson
// reset gets its own pool back (at once, or once its requests have ended). The next pool
// starts unpaused: the toolbar steps only the pool shown.
void PoolControl::leaveShownPool() {
  if (m_paused) setPaused(false);
  giveLessonPoolBack();
}

void PoolControl::giveLessonPoolBack() {
  if (!m_lessonPoolOf.isEmpty() && m_lessonPoolOf == watchedPool())
    sendToWatchedPool([](const pagedchat::remote::Endpoint& e) { return pagedchat::remote::reset_pool(e, {}); });
  m_lessonPoolOf.clear();
}

void PoolControl::watchPool(const QString& url) {
  if (url != watchedPool() || !watchedVllmPool().isEmpty()) leaveShownPool();
  if (m_vllmWatcher) m_vllmWatcher->stop();
  if (!m_poolWatcher) {
    m_poolWatcher = new RemotePoolWatcher(this);
    connect(m_poolWatcher, &RemotePoolWatcher::frame, this, &PoolControl::nameRemoteFrame);
    connect(m_poolWatcher, &RemotePoolWatcher::stopped, this, [this](const QString& why) {
      if (why.isEmpty()) return;  // the user's own switch
      watchPool(QString());
      emit note(tr("The remote pool is no longer shown: %1").arg(why));
    });
  }
  m_poolWatcher->stop();
  // This pool as it is now, not the other's last picture.
  if (url.isEmpty()) sendLocalFrame();
  emit shownChanged(url.isEmpty() ? QString() : tr("KV blocks of %1").arg(QUrl(url).authority()));
  if (!url.isEmpty()) m_poolWatcher->start(url, m_endpoints.apiKey(url));
}

void PoolControl::watchVllmPool(const QString& endpoint, const QString& replay) {
  if (endpoint.isEmpty()) return watchPool(QString());
  leaveShownPool();
  if (m_poolWatcher) m_poolWatcher->stop();
  if (!m_vllmWatcher) {
    m_vllmWatcher = new VllmPoolWatcher(this);
    connect(m_vllmWatcher, &VllmPoolWatcher::frame, this, &PoolControl::vllmFrame);
    connect(m_vllmWatcher, &VllmPoolWatcher::note, this, &PoolControl::note);
    connect(m_vllmWatcher, &VllmPoolWatcher::stopped, this, [this](const QString& why) {
      if (why.isEmpty()) return;
      watchPool(QString());
      emit note(tr("vLLM's KV events are no longer shown: %1").arg(why));
    });
  }
  const QString authority = QUrl(endpoint).authority();
  emit shownChanged(tr("KV blocks of vLLM at %1").arg(authority.isEmpty() ? endpoint : authority));
  // A fresh picture: the cache as the events tell it from now on (and what the replay still has).
  emit vllmFrame(VllmPoolWatcher::frameOf({}, {}, 0));
  m_vllmWatcher->start(endpoint, replay);
  m_db.setSetting(kVllmKey, (endpoint + QLatin1Char(' ') + replay).trimmed());
}

// This machine's frame: the engine side labels each sequence with its chat's id, and the
// chat's title (the controller's, on this thread) names it here.
void PoolControl::nameLocalFrame(PoolFrame frame) {
  auto titleOf = [this](int64_t chat) {
    const ChatController::Chat* c = m_chats.chat(chat);
    return c && !c->record.title.isEmpty() ? c->record.title : tr("chat %1").arg(chat);
  };
  for (PoolFrameSequence& s : frame.sequences)
    if (s.chat >= 0) s.chatTitle = titleOf(s.chat);
  for (PoolFrameDiskBlock& b : frame.diskBlocks) {
    b.titles.clear();
    for (int64_t chat : b.chats) b.titles.append(titleOf(chat));
  }
  emit localFrame(frame);
}

// A remote pool's frame: the sequences of this app's own requests there carry their chat's
// name and colour, as on this machine's pool (the others stay "request N").
void PoolControl::nameRemoteFrame(PoolFrame frame) {
  const QString url = watchedPool();
  for (PoolFrameSequence& s : frame.sequences) {
    if (s.responseId.isEmpty()) continue;
    const auto it = m_remoteRequests.constFind(url + QLatin1Char(' ') + s.responseId);
    if (it == m_remoteRequests.constEnd()) continue;
    if (const ChatController::Chat* c = m_chats.chat(*it)) {
      s.chatTitle = c->record.title.isEmpty() ? tr("chat %1").arg(*it) : c->record.title;
      s.colorIndex = static_cast<int>(*it % 1000);
    }
  }
  emit remoteFrame(frame);
}

// Sent even when it is paused already: a server's pool just reset, or watched after this
// machine's was paused, may not be.
void PoolControl::setPaused(bool paused) {
  if (!control(paused ? "pause" : "resume", 1)) onEngineThread(m_bridge, [paused](EngineBridge& b) { b.setPaused(paused); });
  if (std::exchange(m_paused, paused) != paused) emit pausedChanged(paused);
}

void PoolControl::step(int steps) {
  if (control("step", steps)) return;
  if (steps == 1) onEngineThread(m_bridge, [](EngineBridge& b) { b.stepOnce(); });
  else onEngineThread(m_bridge, [steps](EngineBridge& b) { b.stepMany(steps, false); });
}

void PoolControl::measureRoofline() {
  if (!m_bridge) return emit rooflineMeasured({});
  onEngineThread(m_bridge, [](EngineBridge& b) { b.measureRoofline(); });
}

void PoolControl::stepToNextEvent() {
  if (!control("next_event", 500)) onEngineThread(m_bridge, [](EngineBridge& b) { b.stepMany(500, true); });
}

void PoolControl::afterSent(std::function<void()> then) {
  if (!m_poolControl || watchedPool().isEmpty()) return then();
  QPointer<PoolControl> self(this);
  // The one worker takes requests in order: when this runs, the ones before it have been answered.
  m_poolControl->start([self, then = std::move(then)] {
    QMetaObject::invokeMethod(qApp, [self, then] {
      if (self) then();
    }, Qt::QueuedConnection);
  });
}

bool PoolControl::resetWatchedPool(int numBlocks, int numHostBlocks, int blockSize, int maxContext, int stepTokens) {
  if (numBlocks > 0 && !watchedPool().isEmpty()) m_lessonPoolOf = watchedPool();
  return sendToWatchedPool([shape = pagedchat::remote::RemotePoolShape{numBlocks, numHostBlocks, blockSize, maxContext, stepTokens}](
                               const pagedchat::remote::Endpoint& e) { return pagedchat::remote::reset_pool(e, shape); });
}

bool PoolControl::control(const char* action, int steps) {
  return sendToWatchedPool([action = std::string(action), steps](const pagedchat::remote::Endpoint& e) {
    return pagedchat::remote::control_pool(e, action, steps);
  });
}

bool PoolControl::sendToWatchedPool(std::function<pagedchat::remote::RemoteError(const pagedchat::remote::Endpoint&)> command) {
  const QString url = watchedPool();
  if (url.isEmpty()) return false;
  QPointer<PoolControl> self(this);
  const std::string key = m_endpoints.apiKey(url).toStdString();
  // Blocking (a round trip): off this thread, one request at a time, in the order asked
  // (pause, step, resume must reach the server as given); only a refusal comes back.
  if (!m_poolControl) {
    m_poolControl = new QThreadPool(this);
    m_poolControl->setMaxThreadCount(1);
  }
  m_poolControl->start([self, url, key, command = std::move(command)] {
    const pagedchat::remote::RemoteError e = command({url.toStdString(), key});
    if (e.ok()) return;
    QMetaObject::invokeMethod(qApp, [self, why = QString::fromStdString(e.sentence())] {
      if (self) emit self->note(tr("The remote engine was not stepped: %1").arg(why));
    }, Qt::QueuedConnection);
  });
  return true;
}

void PoolControl::sendLocalFrame() {
  onEngineThread(m_bridge, [](EngineBridge& b) { b.sendFrame(); });
}
