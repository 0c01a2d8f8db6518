// Routes an engine's events to the API requests that caused them, one queued call per step.
#include "server/request_router.h"

#include <QMetaObject>

#include <utility>

#include "engine/model/model.h"

void RequestRouter::attach(std::shared_ptr<const pagedchat::Model> model, pagedchat::Engine& engine,
                           std::function<void()> wake) {
  uint64_t attachment;
  {
    std::lock_guard lock(m_mutex);
    m_model = std::move(model);
    m_engine = &engine;
    m_wake = std::move(wake);
    m_stats = engine.stats();
    attachment = ++m_attachment;
  }
  engine.subscribe([this, attachment](const pagedchat::EngineEvent& e) {
    if (attachment == m_attachment) onEvent(e);  // m_attachment only changes on this thread
  });
}

void RequestRouter::detach(const QString& reason) {
  std::lock_guard lock(m_mutex);
  if (!m_engine) return;
  failAllLocked(reason.toStdString());
  deliverLocked();
  m_engine = nullptr;
  m_model.reset();
  m_wake = nullptr;
  m_stats = {};
  ++m_attachment;
}

void RequestRouter::afterStep() {
  std::lock_guard lock(m_mutex);
  if (m_engine) deliverLocked();
}

void RequestRouter::failAll(const QString& message) {
  std::lock_guard lock(m_mutex);
  failAllLocked(message.toStdString());
}

bool RequestRouter::owns(pagedchat::RequestId id) const {
  std::lock_guard lock(m_mutex);
  return m_routes.count(id) > 0;
}

bool RequestRouter::isLoaded() const {
  std::lock_guard lock(m_mutex);
  return m_engine != nullptr;
}

std::shared_ptr<const pagedchat::Model> RequestRouter::model() const {
  std::lock_guard lock(m_mutex);
  return m_model;
}

QString RequestRouter::modelId() const {
  std::lock_guard lock(m_mutex);
  return m_modelId;
}

void RequestRouter::setModelId(const QString& id) {
  std::lock_guard lock(m_mutex);
  m_modelId = id;
}

pagedchat::RequestId RequestRouter::submit(pagedchat::Request request, QObject* context, Listener listener) {
  pagedchat::RequestId id;
  std::function<void()> wake;
  {
    // Registered under the lock the engine thread takes to route events, so no event of the
    // request can be looked up before its route exists, and the engine cannot be detached
    // (destroyed) while it takes the request.
    std::lock_guard lock(m_mutex);
    if (!m_engine || static_cast<int>(m_routes.size()) >= m_maxActive) return -1;
    const int n = request.n;
    id = m_engine->submit(std::move(request));
    Route& r = m_routes[id];
    r.context = context;
    r.listener = std::move(listener);
    r.numSamples = n;
    wake = m_wake;
  }
  wake();
  return id;
}

void RequestRouter::abort(pagedchat::RequestId id) {
  std::function<void()> wake;
  {
    std::lock_guard lock(m_mutex);
    if (!m_engine || !m_routes.count(id)) return;
    m_engine->abort(id);
    wake = m_wake;
  }
  wake();
}

void RequestRouter::abandon(QObject* context) {
  std::function<void()> wake;
  {
    std::lock_guard lock(m_mutex);
    for (auto it = m_routes.begin(); it != m_routes.end();) {
      if (it->second.context != context) {
        ++it;
        continue;
      }
      if (m_engine) m_engine->abort(it->first);
      it = m_routes.erase(it);
    }
    wake = m_wake;
  }
  // Updates already posted to context are dropped by Qt when it is destroyed.
  if (wake) wake();
}

pagedchat::EngineStats RequestRouter::stats() const {
  std::lock_guard lock(m_mutex);
  return m_stats;
}

int RequestRouter::numActive() const {
  std::lock_guard lock(m_mutex);
  return static_cast<int>(m_routes.size());
}

void RequestRouter::onEvent(const pagedchat::EngineEvent& e) {
  using Kind = pagedchat::EngineEventKind;
  std::lock_guard lock(m_mutex);
  auto it = m_routes.find(e.request);
  if (e.request < 0 || it == m_routes.end()) return;
  Route& r = it->second;
  switch (e.kind) {
    case Kind::kv:
      // A prompt block found in the prefix cache. Counted until the first token only: later
      // hits are a preempted sequence finding its own blocks again, not prompt reuse.
      if (e.kv.kind == pagedchat::KvEventKind::cache_hit && !r.sawToken) ++r.numCacheHitBlocks;
      return;
    case Kind::token: r.sawToken = true; break;
    case Kind::finished: ++r.numFinished; break;
    case Kind::error: r.failed = true; break;
  }
  r.pending.events.push_back(e);
}

void RequestRouter::deliverLocked() {
  if (m_engine) m_stats = m_engine->stats();
  const int64_t blockSize = m_stats.kv.block_size;
  for (auto it = m_routes.begin(); it != m_routes.end();) {
    Route& r = it->second;
    // A failed request may end without a finished event for every sample (the error came
    // before its samples were forked), so an error ends the route too.
    const bool done = r.failed || r.numFinished >= r.numSamples;
    if (!r.pending.events.empty() || done) {
      RequestUpdate update = std::exchange(r.pending, {});
      update.done = done;
      update.numCachedPromptTokens = r.numCacheHitBlocks * blockSize;
      QMetaObject::invokeMethod(r.context, [listener = r.listener, update = std::move(update)] { listener(update); },
                                Qt::QueuedConnection);
    }
    if (done) it = m_routes.erase(it);
    else ++it;
  }
}

void RequestRouter::failAllLocked(const std::string& message) {
  for (auto& [id, r] : m_routes) {
    pagedchat::EngineEvent e;
    e.kind = pagedchat::EngineEventKind::error;
    e.request = id;
    e.reason = "request " + std::to_string(id) + ": " + message;
    r.pending.events.push_back(e);
    r.failed = true;
    if (m_engine) m_engine->abort(id);
  }
}
