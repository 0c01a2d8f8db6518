// The server's engine thread: load, then step while there is work; the router does the rest.
#include "server/engine/engine_host.h"

#include <QMetaObject>
#include <QThread>

#include <cstdio>
#include <utility>

#include "engine/model/model.h"

EngineHost::EngineHost(Config config)
    : m_config(std::move(config)),
      m_router(m_config.maxActive),
      m_loop({.post = [this] { QMetaObject::invokeMethod(this, [this] { m_loop.run_once(); }, Qt::QueuedConnection); },
              .before_step = {},
              .on_step_failed =
                  [this](const std::string& why) {
                    // The requests in flight fail with it rather than hang; the server goes on.
                    m_router.failAll(QStringLiteral("the forward pass failed: %1").arg(QString::fromStdString(why)));
                  },
              .after_step = [this](bool) { afterEngineTurn(); },
              .while_paused = [this] { afterEngineTurn(); }}) {
  m_router.setModelId(m_config.modelId);
}

EngineHost::~EngineHost() {
  m_router.detach(QStringLiteral("the model was unloaded: the server is shutting down"));
  m_loop.attach(nullptr);
}

void EngineHost::load() {
  try {
    if (m_config.loadDelayMs > 0) QThread::msleep(static_cast<unsigned long>(m_config.loadDelayMs));
    std::shared_ptr<pagedchat::Model> model = pagedchat::Model::load(m_config.modelPath.toStdString());
    m_engine = pagedchat::assemble_engine(model, m_config.engine);
    pagedchat::ChatTemplate chatTemplate = pagedchat::ChatModel::own_template(*model);
    if (!m_config.chatTemplate.empty()) chatTemplate = chatTemplate.with_jinja(m_config.chatTemplate);  // throws naming the fault
    m_chatModel = pagedchat::ChatModel(m_engine.model, std::move(chatTemplate));
    m_loop.attach(m_engine.engine.get());
    m_router.attach(m_chatModel, *m_engine.engine, [this] { m_loop.wake(); });
    if (m_config.allowPoolControl)
      m_router.setPoolControl([this](const PoolControlRequest& control) {
        QMetaObject::invokeMethod(this, [this, control] { applyControl(control); }, Qt::QueuedConnection);
      });
    const auto& c = model->config();
    emit loaded(QStringLiteral("%1 · %2 layers · %3 · %4 KV blocks of %5 tokens · %6")
                    .arg(QString::fromStdString(c.name))
                    .arg(c.num_layers)
                    .arg(QString::fromStdString(m_engine.backend_description))
                    .arg(m_engine.num_blocks)
                    .arg(m_engine.engine->block_size())
                    .arg(QString::fromStdString(m_engine.speculation)));
  } catch (const std::exception& e) {
    m_loop.attach(nullptr);
    m_engine = {};
    emit loadFailed(QString::fromUtf8(e.what()));
  }
}

// Step mode on the server, as the app's toolbar has it on its own engine: each step delivered
// (requests' tokens, the pool's frame) before the next.
void EngineHost::applyControl(const PoolControlRequest& control) {
  if (control.action == QLatin1String("pause")) return m_loop.set_paused(true);
  if (control.action == QLatin1String("resume")) return m_loop.set_paused(false);
  if (control.action == QLatin1String("reset")) {
    // The server's own pool back, when a lesson is left: at once if no request runs, else once
    // the last one has ended (a client leaving cannot wait for the class's requests).
    m_ownPoolOwed = control.shape.num_blocks == 0 && m_router.numActive() > 0;
    if (!m_ownPoolOwed) resetPool(control.shape);
    return;
  }
  const bool toEvent = control.action == QLatin1String("next_event");
  for (int i = 0; i < control.steps; ++i) {
    const uint64_t before = m_router.numKvEvents();
    const bool more = m_loop.step_once();
    afterEngineTurn();
    if ((toEvent && m_router.numKvEvents() != before) || !more) break;
  }
}

// What a step, or a paused turn, owes: the router's deliveries, and the own pool where it is
// due (the engine rebuilt after the step loop's turn, not inside it).
void EngineHost::afterEngineTurn() {
  m_router.afterStep();
  if (m_ownPoolOwed && m_router.numActive() == 0)
    QMetaObject::invokeMethod(this, [this] { giveOwnPoolBack(); }, Qt::QueuedConnection);
}

void EngineHost::giveOwnPoolBack() {
  if (!m_ownPoolOwed || m_router.numActive() > 0) return;
  m_ownPoolOwed = false;
  resetPool({});
}

// A lesson's scene on a teacher's server: the same model, a fresh engine whose pool has the shape
// asked (the app's teaching preset does the same on its own engine), or the server's own again;
// paused or not as it was.
// Only between requests (the API refused it otherwise; one that came since is failed, saying why).
void EngineHost::resetPool(const PoolControlRequest::Shape& shape) {
  if (!m_engine.engine) return;
  pagedchat::EngineOptions options = m_config.engine;
  if (shape.num_blocks > 0) {  // else the server's own pool, as it started
    options.engine.block_size = shape.block_size;
    options.engine.num_blocks = shape.num_blocks;
    options.engine.num_host_blocks = shape.num_host_blocks;
    options.engine.max_context = shape.max_context;
    options.engine.max_batched_tokens = shape.max_batched_tokens;
    options.kv_budget_bytes = options.host_budget_bytes = 0;
    options.num_contexts = 0;
  }
  std::shared_ptr<const pagedchat::Model> model = m_engine.model;
  m_router.detach(QStringLiteral("the server's pool was reset for a lesson"));
  m_loop.attach(nullptr);
  m_engine = {};
  try {
    m_engine = pagedchat::assemble_engine(model, options);
  } catch (const std::exception& e) {
    // The shape asked does not fit (a context past the model's, a pool of no room): the server's own comes back.
    std::fprintf(stderr, "pagedchat-server: the pool was not reset: %s\n", e.what());
    try {
      m_engine = pagedchat::assemble_engine(model, m_config.engine);
    } catch (const std::exception& again) {
      std::fprintf(stderr, "pagedchat-server: error: the engine could not be rebuilt: %s\n", again.what());
      return;  // detached: requests are answered "loading"
    }
  }
  m_loop.attach(m_engine.engine.get());
  m_router.attach(m_chatModel, *m_engine.engine, [this] { m_loop.wake(); });
  m_router.afterStep();  // the watchers' frame of the new pool, paused or not
}
