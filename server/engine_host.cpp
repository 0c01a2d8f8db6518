// The server's engine thread: load, then step while there is work; the router does the rest.
#include "server/engine_host.h"

#include <QMetaObject>
#include <QThread>

#include <algorithm>
#include <utility>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/model/model.h"

EngineHost::EngineHost(Config config) : m_config(std::move(config)), m_router(m_config.maxActive) {
  m_router.setModelId(m_config.modelId);
}

EngineHost::~EngineHost() { m_router.detach(QStringLiteral("the model was unloaded: the server is shutting down")); }

void EngineHost::load() {
  try {
    if (m_config.loadDelayMs > 0) QThread::msleep(static_cast<unsigned long>(m_config.loadDelayMs));
    std::shared_ptr<pagedchat::Model> model = pagedchat::Model::load(m_config.modelPath.toStdString());
    m_model = model;
    m_backend = std::make_unique<pagedchat::CpuBackend>(model->weights, std::clamp(m_config.threads, 0, 1024));
    pagedchat::EngineConfig ec = m_config.engine;
    if (ec.max_context <= 0 || ec.max_context > model->config().context_length) ec.max_context = model->config().context_length;
    m_engine = std::make_unique<pagedchat::Engine>(*model, *m_backend, ec);
    m_router.attach(m_model, *m_engine, [this] { wake(); });
    const auto& c = model->config();
    const pagedchat::EngineStats stats = m_engine->stats();
    emit loaded(QStringLiteral("%1 · %2 layers · %3 threads · %4 KV blocks of %5 tokens")
                    .arg(QString::fromStdString(c.name))
                    .arg(c.num_layers)
                    .arg(m_backend->num_threads())
                    .arg(stats.kv.num_blocks)
                    .arg(stats.kv.block_size));
  } catch (const std::exception& e) {
    m_engine.reset();
    m_backend.reset();
    m_model.reset();
    emit loadFailed(QString::fromUtf8(e.what()));
  }
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
    m_router.failAll(QStringLiteral("the forward pass failed: the engine step failed: %1").arg(QString::fromUtf8(e.what())));
  }
  m_router.afterStep();
  if (m_engine->has_work()) wake();
}
