#pragma once
// The headless server's engine thread: owns the model, the backend and the Engine, and steps
// the engine whenever any request has work. Requests come and go through its RequestRouter
// (thread-safe); in the desktop app the EngineBridge owns the engine and the router instead,
// so the API's requests batch with the chats (see docs/DESIGN.md, "Server").

#include <QObject>
#include <QString>

#include <atomic>
#include <memory>

#include "server/request_router.h"

namespace pagedchat {
struct Model;
class CpuBackend;
}  // namespace pagedchat

class EngineHost : public QObject {
  Q_OBJECT
 public:
  struct Config {
    QString modelPath;
    QString modelId;  // what /v1/models lists and requests name
    int threads = 0;  // 0: all cores
    pagedchat::EngineConfig engine;
    int maxActive = 256;  // requests in flight (waiting or running); more get 429
    int loadDelayMs = 0;  // tests: hold the model load back to observe the loading state
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
  void wake();  // any thread: makes sure a pump() is queued
  void pump();  // engine thread: one step, then the updates, then again while there is work

  const Config m_config;
  RequestRouter m_router;
  std::shared_ptr<const pagedchat::Model> m_model;
  std::unique_ptr<pagedchat::CpuBackend> m_backend;
  std::unique_ptr<pagedchat::Engine> m_engine;
  std::atomic<bool> m_pumpQueued{false};
};
