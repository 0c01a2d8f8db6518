// The server's engine thread: load, step while there is work, route events to their owners.
#include "server/engine_host.h"

#include <QMetaObject>
#include <QThread>

#include <algorithm>
#include <utility>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/model/model.h"

EngineHost::EngineHost(Config config) : m_config(std::move(config)) {}

EngineHost::~EngineHost() = default;

void EngineHost::load() {
  try {
    if (m_config.loadDelayMs > 0) QThread::msleep(static_cast<unsigned long>(m_config.loadDelayMs));
    m_model = pagedchat::Model::load(m_config.modelPath.toStdString());
    m_backend = std::make_unique<pagedchat::CpuBackend>(m_model->weights, std::clamp(m_config.threads, 0, 1024));
    pagedchat::EngineConfig ec = m_config.engine;
    if (ec.max_context <= 0 || ec.max_context > m_model->config().context_length) ec.max_context = m_model->config().context_length;
    m_engine = std::make_unique<pagedchat::Engine>(*m_model, *m_backend, ec);
    m_engine->subscribe([this](const pagedchat::EngineEvent& e) { onEvent(e); });
    {
      std::lock_guard lock(m_mutex);
      m_stats = m_engine->stats();
    }
    m_loaded.store(true);
    const auto& c = m_model->config();
    emit loaded(QStringLiteral("%1 · %2 layers · %3 threads · %4 KV blocks of %5 tokens")
                    .arg(QString::fromStdString(c.name))
                    .arg(c.num_layers)
                    .arg(m_backend->num_threads())
                    .arg(m_stats.kv.num_blocks)
                    .arg(m_stats.kv.block_size));
  } catch (const std::exception& e) {
    m_engine.reset();
    m_backend.reset();
    m_model.reset();
    emit loadFailed(QString::fromUtf8(e.what()));
  }
}

pagedchat::RequestId EngineHost::submit(pagedchat::Request request, QObject* context, Listener listener) {
  if (!isLoaded()) return -1;
  pagedchat::RequestId id;
  {
    // Registered under the lock the engine thread takes to route events, so no event of the
    // request can be looked up before its route exists.
    std::lock_guard lock(m_mutex);
    if (static_cast<int>(m_routes.size()) >= m_config.maxActive) return -1;
    const int n = request.n;
    id = m_engine->submit(std::move(request));
    Route& r = m_routes[id];
    r.context = context;
    r.listener = std::move(listener);
    r.numSamples = n;
  }
  wake();
  return id;
}

void EngineHost::abort(pagedchat::RequestId id) {
  if (!isLoaded()) return;
  m_engine->abort(id);
  wake();
}

pagedchat::EngineStats EngineHost::stats() const {
  std::lock_guard lock(m_mutex);
  return m_stats;
}

int EngineHost::numActive() const {
  std::lock_guard lock(m_mutex);
  return static_cast<int>(m_routes.size());
}

void EngineHost::wake() {
  if (!m_pumpQueued.exchange(true)) QMetaObject::invokeMethod(this, &EngineHost::pump, Qt::QueuedConnection);
}

// One step per event-loop turn, so the thread stays responsive (quit, load) between steps.
// The flag is cleared before looking for work: a submit that lands after the look either
// sees the flag clear and queues a pump, or its command is seen here.
void EngineHost::pump() {
  m_pumpQueued.store(false);
  if (!m_engine) return;
  try {
    m_engine->step();
  } catch (const std::exception& e) {
    // The engine reports request errors as events; an exception here is our bug or memory
    // running out. The requests in flight fail with it rather than hang; the server goes on.
    failAll(QStringLiteral("the engine step failed: %1").arg(QString::fromUtf8(e.what())));
  }
  deliver();
  if (m_engine->has_work()) wake();
}

void EngineHost::onEvent(const pagedchat::EngineEvent& e) {
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

void EngineHost::deliver() {
  std::lock_guard lock(m_mutex);
  m_stats = m_engine->stats();
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

void EngineHost::failAll(const QString& message) {
  std::lock_guard lock(m_mutex);
  for (auto& [id, r] : m_routes) {
    pagedchat::EngineEvent e;
    e.kind = pagedchat::EngineEventKind::error;
    e.request = id;
    e.reason = "request " + std::to_string(id) + ": the forward pass failed: " + message.toStdString();
    r.pending.events.push_back(e);
    r.failed = true;
    m_engine->abort(id);
  }
}
