#pragma once
// The engine thread of the server: owns the model, the backend and the Engine, and steps the
// engine whenever any request has work. Other threads submit and abort (both thread-safe) and
// get each step's events for their request back as one queued call on their own thread, so a
// request's owner never locks anything. Unlike ui/EngineWorker (one reply at a time through
// RequestRunner), it serves many requests at once, which is what continuous batching needs.
//
// Sharing one engine with the app's chats (left for the app issue): the app's worker would
// submit through this host instead of stepping its own Engine; it already speaks in requests
// and events, so only the ownership moves. See docs/DESIGN.md, "Server".

#include <QObject>
#include <QString>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/engine/engine.h"

namespace pagedchat {
struct Model;
class CpuBackend;
}  // namespace pagedchat

// What a request's owner receives after each step that concerned it.
struct RequestUpdate {
  std::vector<pagedchat::EngineEvent> events;  // token, finished and error events, in order
  int64_t numCachedPromptTokens = 0;           // prompt tokens the prefix cache served so far
  bool done = false;                           // the last update of the request
};

class EngineHost : public QObject {
  Q_OBJECT
 public:
  struct Config {
    QString modelPath;
    int threads = 0;  // 0: all cores
    pagedchat::EngineConfig engine;
    int maxActive = 256;  // requests in flight (waiting or running); more get 429
    int loadDelayMs = 0;  // tests: hold the model load back to observe the loading state
  };
  using Listener = std::function<void(const RequestUpdate&)>;

  explicit EngineHost(Config config);
  ~EngineHost() override;

  // --- Any thread ---------------------------------------------------------------------
  bool isLoaded() const { return m_loaded.load(); }
  // The model, once loaded (immutable then; its tokenizer is safe to use from any thread).
  const pagedchat::Model* model() const { return isLoaded() ? m_model.get() : nullptr; }
  // Submits a request; `listener` runs on `context`'s thread, each step's events in one call.
  // context must outlive the request (the server object does; a listener that needs a
  // shorter-lived object holds a QPointer to it and checks it on its own thread).
  // Returns -1 when no model is loaded or maxActive requests are in flight.
  pagedchat::RequestId submit(pagedchat::Request request, QObject* context, Listener listener);
  void abort(pagedchat::RequestId id);
  pagedchat::EngineStats stats() const;  // as of the last step
  int numActive() const;

 public slots:
  void load();  // engine thread: loads the model, then emits loaded or loadFailed

 signals:
  void loaded(const QString& description);
  void loadFailed(const QString& error);

 private:
  struct Route {
    QObject* context = nullptr;
    Listener listener;
    int numSamples = 1;
    int numFinished = 0;
    bool failed = false;
    bool sawToken = false;
    int64_t numCacheHitBlocks = 0;
    RequestUpdate pending;
  };

  void wake();  // any thread: makes sure a pump() is queued
  void pump();  // engine thread: one step, then the updates, then again while there is work
  void onEvent(const pagedchat::EngineEvent& e);  // engine thread, inside step()
  void deliver();                                 // engine thread, after step()
  void failAll(const QString& message);           // engine thread: every request in flight fails

  const Config m_config;
  std::unique_ptr<pagedchat::Model> m_model;
  std::unique_ptr<pagedchat::CpuBackend> m_backend;
  std::unique_ptr<pagedchat::Engine> m_engine;
  std::atomic<bool> m_loaded{false};
  std::atomic<bool> m_pumpQueued{false};

  mutable std::mutex m_mutex;  // guards the fields below; taken before the engine's own lock
  std::map<pagedchat::RequestId, Route> m_routes;
  pagedchat::EngineStats m_stats;
};
