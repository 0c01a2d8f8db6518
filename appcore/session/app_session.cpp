// The app's session: its parts made in the order they depend on each other.
#include "appcore/session/app_session.h"

#include <QFileInfo>

#include "appcore/bridge/engine_bridge.h"
#include "appcore/remote/remote_bridge.h"
#include "appcore/remote/remote_endpoints.h"
#include "appcore/session/chat_controller.h"
#include "appcore/session/model_load.h"
#include "appcore/session/pool_control.h"

AppSession::AppSession(ChatDatabase& db, EngineBridge* bridge, QObject* parent) : QObject(parent), m_db(db), m_bridge(bridge) {
  m_settings = AppSettings::load(m_db);
  m_chats = new ChatController(m_db, m_bridge, this);
  // Chats on remote OpenAI-compatible servers (File > Remote engines, Chat > Run this chat on).
  m_remoteEndpoints = new RemoteEndpoints(m_db, this);
  m_remoteBridge = new RemoteBridge(this);
  m_chats->setRemote(m_remoteBridge, m_remoteEndpoints);
  m_pool = new PoolControl(m_bridge, *m_chats, m_db, *m_remoteEndpoints, *m_remoteBridge, this);
  // What the new engine is (its information, its context length) is known before anyone hears
  // it is ready: these connections come before ModelLoad's, whose answer resumes a waiting
  // lesson and the window at once, and Qt delivers a signal's queued slots in the order they
  // were connected. (Connected after, a lesson could read the old context length: a rare
  // failure of test_app_restart.)
  if (m_bridge) {
    connect(m_bridge, &EngineBridge::modelDescribed, this, [this](const ModelInfo& info) { m_modelInfo = info; });
    connect(m_bridge, &EngineBridge::modelLoaded, this, [this](const QString&, int contextLength) {
      m_contextLength = contextLength;
      emit contextLengthChanged(contextLength);
    });
  }
  // Before anyone else hears of the new engine, the chats know their sequences went with the old.
  m_load = new ModelLoad(m_bridge, m_db, this);
  connect(m_load, &ModelLoad::modelInUse, this, &AppSession::modelInUse);
}

// The pool control goes first: it gives a watched server its own pool back before the
// endpoints (with their keys) go.
AppSession::~AppSession() { delete m_pool; }

void AppSession::setSettings(const AppSettings& settings) {
  m_settings = settings;
  m_settings.save(m_db);
  emit settingsChanged();
}

void AppSession::applySettings(const AppSettings& settings, const QString& modelPath) {
  const QString path = modelPath.isEmpty() ? m_load->currentPath() : QFileInfo(modelPath).absoluteFilePath();
  const bool reload = (!settings.sameEngine(m_settings) || path != m_load->currentPath()) && !m_load->currentPath().isEmpty();
  setSettings(settings);
  if (!reload || m_load->load(path, m_settings.engineConfig())) return;
  // A load is under way (a lesson's engine, say): these settings' engine once it is in use.
  if (m_load->isLoading())
    connect(this, &AppSession::modelReady, this, [this, path] { m_load->load(path, m_settings.engineConfig()); },
            Qt::SingleShotConnection);
}

bool AppSession::loadFresh(const AppSettings& settings, const QString& modelPath) {
  if (m_load->currentPath().isEmpty() || m_load->isLoading()) return false;
  setSettings(settings);
  return m_load->load(modelPath.isEmpty() ? m_load->currentPath() : modelPath, m_settings.engineConfig());
}

void AppSession::modelInUse() {
  m_modelReady = true;
  m_chats->engineReplaced();
  emit modelReady();
}
