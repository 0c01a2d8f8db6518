#pragma once
// The headless server's engine thread: owns the engine assembled from options (model, backend,
// Engine; runtime/engine_assembly.h) and steps it through the one StepLoop whenever any
// request has work. Requests come and go through its RequestRouter (thread-safe); in the
// desktop app the EngineBridge owns the engine and the router instead, so the API's requests
// batch with the chats (see docs/DESIGN.md, "Server").

#include <QObject>
#include <QString>

#include <string>

#include <memory>

#include "engine/engine/step_loop.h"
#include "runtime/engine_assembly.h"
#include "server/engine/request_router.h"

class EngineHost : public QObject {
  Q_OBJECT
 public:
  struct Config {
    QString modelPath;
    QString modelId;  // what /v1/models lists and requests name
    std::string chatTemplate;  // a Jinja template in place of the model's own (--chat-template); empty: the model's
    // The backend (cpu by default; cuda with its dtype and GPU memory share) and the engine:
    // block size, tokens per step, context; the pool from num_blocks or num_contexts.
    pagedchat::EngineOptions engine;
    int maxActive = 256;  // requests in flight (waiting or running); more get 429
    int loadDelayMs = 0;  // tests: hold the model load back to observe the loading state
    // Clients may pause and step the engine (POST /v1/kv/control): a teacher's server, its class
    // watching the pool. Off by default: one client's pause stops everyone's requests.
    bool allowPoolControl = false;
  };

  explicit EngineHost(Config config);
  ~EngineHost() override;

  RequestRouter& router() { return m_router; }  // any thread

 public slots:
  void load();  // engine thread: loads the model, then emits loaded or loadFailed

 signals:
  void loaded(const QString& description);
  void loadFailed(const QString& error);

 private:
  const Config m_config;
  RequestRouter m_router;
  pagedchat::AssembledEngine m_engine;
  pagedchat::ChatModel m_chatModel;  // m_engine's model with the template of the GGUF (kept across a pool reset)
  pagedchat::StepLoop m_loop;

  void applyControl(const PoolControlRequest& control);  // engine thread
  void resetPool(const PoolControlRequest::Shape& shape);  // engine thread
  void afterEngineTurn();  // engine thread, after each step or paused turn: delivered, the own pool queued when due
  void giveOwnPoolBack();  // engine thread: the reset owed below, if no request runs now
  bool m_ownPoolOwed = false;  // a bare reset came while requests ran: done once none does
};
