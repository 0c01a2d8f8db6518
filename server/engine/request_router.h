#pragma once
// API requests on an Engine that someone else steps: the headless server's EngineHost, or the
// desktop app's EngineBridge, whose chats then batch with the API's requests in one KV pool.
// Other threads submit and abort (both thread-safe); after each step the engine's owner calls
// afterStep(), which sends each request's events back as one queued call on its owner's
// thread, so a request's owner never locks anything.
//
// The engine's owner attaches the engine once it is built and detaches it before destroying
// it (a model reload, the app closing): requests in flight then fail with the reason given,
// and submit() answers -1 ("loading") until the next attach.

#include <QObject>
#include <QString>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/chat/chat_model.h"
#include "engine/engine/engine.h"
#include "engine/engine/request_tracker.h"
#include "server/api/pool_watch.h"

namespace pagedchat {
struct Model;
}

// A client's step-mode command (POST /v1/kv/control). reset: the pool rebuilt with this shape
// (the model kept), refused by the owner while requests are in flight.
struct PoolControlRequest {
  QString action;  // pause, resume, step, next_event, reset
  int steps = 1;
  struct Shape {
    int32_t num_blocks = 0, num_host_blocks = 0, block_size = 0, max_context = 0, max_batched_tokens = 0;
  } shape;
};

// What a request's owner receives after each step that concerned it: the request tracker's
// update (its token, finished and error events, the prefix cache's figure, done).
using RequestUpdate = pagedchat::RequestUpdate;

class RequestRouter {
 public:
  using Listener = std::function<void(const RequestUpdate&)>;

  explicit RequestRouter(int maxActive = 256) : m_maxActive(maxActive) {}
  RequestRouter(const RequestRouter&) = delete;
  RequestRouter& operator=(const RequestRouter&) = delete;

  // --- Engine thread (the engine's owner) ----------------------------------------------
  // `wake` is called from any thread after a submit or abort: it must make the owner step
  // the engine soon (a queued call), never step it inline.
  void attach(pagedchat::ChatModel model, pagedchat::Engine& engine, std::function<void()> wake);
  void detach(const QString& reason);
  void afterStep();                       // delivers what the step produced
  void failAll(const QString& message);   // every request in flight fails (a step threw)
  bool owns(pagedchat::RequestId id) const;  // a request of the API, not of the app's chats
  // The API request a sequence belongs to while it runs (-1: none): the pool view's label.
  pagedchat::RequestId requestOf(pagedchat::SequenceId seq) const;

  // --- Any thread ----------------------------------------------------------------------
  bool isLoaded() const;
  // The model (with its chat template) while it stays attached; holding the pointer keeps it
  // alive across a reload.
  std::shared_ptr<const pagedchat::ChatModel> model() const;
  // What /v1/models lists and requests must name: known from the file name before the model
  // has loaded, so set apart from attach.
  QString modelId() const;
  void setModelId(const QString& id);
  // Submits a request; `listener` runs on `context`'s thread, each step's events in one call.
  // context must outlive the request (the server object does; a listener that needs a
  // shorter-lived object holds a QPointer to it and checks it on its own thread).
  // Returns -1 when nothing is attached or maxActive requests are in flight. `responseId` (the
  // API's "chatcmpl-N") names the request's sequences in the pool's frames, so a client that
  // watches the pool knows its own requests there.
  pagedchat::RequestId submit(pagedchat::Request request, QObject* context, Listener listener, const QString& responseId = {});
  void abort(pagedchat::RequestId id);
  // Holds a request back while its client reads too slowly (Engine::hold), or lets it go on.
  void hold(pagedchat::RequestId id, bool held);
  // context is going away (a server being stopped): its requests are aborted and no listener
  // of theirs runs again. Call it on context's thread, before it is destroyed.
  void abandon(QObject* context);
  pagedchat::EngineStats stats() const;  // as of the last step
  int numActive() const;

  // The pool watched (GET /v1/kv/events): after the next step a frame with the whole snapshot,
  // then one after each step with KV events; `listener` runs on `context`'s thread. Any thread.
  using PoolListener = std::function<void(const std::shared_ptr<const PoolWatchFrame>&)>;
  int watchPool(QObject* context, PoolListener listener);
  void unwatchPool(int watch);
  // Stepping the engine from a client (POST /v1/kv/control, a teacher's server): the owner sets
  // what pause, resume, step N, next_event (steps until one changes a KV block) and reset (a
  // fresh pool of the shape given, a lesson's scene) do, or nothing (the default: refused).
  // Any thread; control() returns whether the owner allows it.
  using PoolControl = std::function<void(const PoolControlRequest&)>;
  void setPoolControl(PoolControl control);
  bool control(const PoolControlRequest& request);
  uint64_t numKvEvents() const;  // KV events of the attached engine so far (watched or not)

 private:
  struct Route {
    QObject* context = nullptr;
    Listener listener;
    QString responseId;
  };

  // Queues a command for one of the API's requests on the attached engine, then wakes its owner;
  // nothing when no engine is attached or the request is not the API's (or is over).
  void command(pagedchat::RequestId id, const std::function<void(pagedchat::Engine&)>& apply);
  void deliverLocked();
  void deliverPoolLocked();
  void failAllLocked(const std::string& message);

  const int m_maxActive;
  mutable std::mutex m_mutex;  // guards everything below; taken before the engine's own lock
  std::shared_ptr<const pagedchat::ChatModel> m_model;
  pagedchat::Engine* m_engine = nullptr;
  uint64_t m_attachment = 0;  // which attach an engine sink belongs to (old engines' sinks go quiet)
  QString m_modelId;
  std::function<void()> m_wake;
  std::map<pagedchat::RequestId, Route> m_routes;
  pagedchat::RequestTracker m_tracker;  // what each route's request produced (fed under m_mutex)
  pagedchat::EngineStats m_stats;
  // A watcher's next frame: only the latest waits for it (a watcher slower than the engine's
  // steps skips frames; what waits stays one frame, however slow it is).
  struct PoolSlot {
    std::mutex mutex;
    std::shared_ptr<const PoolWatchFrame> frame;
    bool queued = false;
  };
  struct PoolWatcher {
    QObject* context = nullptr;
    PoolListener listener;
    std::shared_ptr<PoolSlot> slot = std::make_shared<PoolSlot>();
  };
  uint64_t m_numKvEvents = 0;
  std::map<int, PoolWatcher> m_poolWatchers;
  int m_nextWatch = 0;
  PoolControl m_poolControl;
  bool m_poolFrameDue = false;                  // a new watcher waits for its first snapshot
  std::vector<pagedchat::KvEvent> m_poolEvents;  // since the last frame (only while watched)
};
