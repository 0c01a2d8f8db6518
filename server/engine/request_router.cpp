// Routes an engine's events to the API requests that caused them, one queued call per step.
#include "server/engine/request_router.h"

#include <QMetaObject>

#include <optional>
#include <set>
#include <utility>

#include "engine/model/model.h"

void RequestRouter::attach(pagedchat::ChatModel model, pagedchat::Engine& engine, std::function<void()> wake) {
  uint64_t attachment;
  {
    std::lock_guard lock(m_mutex);
    m_model = std::make_shared<const pagedchat::ChatModel>(std::move(model));
    m_engine = &engine;
    m_wake = std::move(wake);
    m_stats = engine.stats();
    attachment = ++m_attachment;
    m_poolFrameDue = true;  // watchers see the new pool (a reload, a lesson's reset) at once
  }
  engine.subscribe([this, attachment](const pagedchat::EngineEvent& e) {
    if (attachment != m_attachment) return;  // m_attachment only changes on this thread
    std::lock_guard lock(m_mutex);
    m_tracker.on_event(e);
    if (e.kind != pagedchat::EngineEventKind::kv) return;
    ++m_numKvEvents;
    // Kept for the next frame while someone watches (bounded: a frame a step takes them).
    if (!m_poolWatchers.empty()) m_poolEvents.push_back(e.kv);
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

pagedchat::RequestId RequestRouter::requestOf(pagedchat::SequenceId seq) const {
  std::lock_guard lock(m_mutex);
  return m_tracker.request_of(seq);
}

bool RequestRouter::isLoaded() const {
  std::lock_guard lock(m_mutex);
  return m_engine != nullptr;
}

std::shared_ptr<const pagedchat::ChatModel> RequestRouter::model() const {
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

pagedchat::RequestId RequestRouter::submit(pagedchat::Request request, QObject* context, Listener listener, const QString& responseId) {
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
    m_routes[id] = {context, std::move(listener), responseId};
    m_tracker.track(id, n);
    wake = m_wake;
  }
  wake();
  return id;
}

void RequestRouter::abort(pagedchat::RequestId id) {
  command(id, [id](pagedchat::Engine& engine) { engine.abort(id); });
}

void RequestRouter::hold(pagedchat::RequestId id, bool held) {
  command(id, [id, held](pagedchat::Engine& engine) { engine.hold(id, held); });
}

// The wake runs outside the lock: it may take the owner's locks of its own.
void RequestRouter::command(pagedchat::RequestId id, const std::function<void(pagedchat::Engine&)>& apply) {
  std::function<void()> wake;
  {
    std::lock_guard lock(m_mutex);
    if (!m_engine || !m_routes.count(id)) return;
    apply(*m_engine);
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
      m_tracker.forget(it->first);
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

int RequestRouter::watchPool(QObject* context, PoolListener listener) {
  std::function<void()> wake;
  int id;
  {
    std::lock_guard lock(m_mutex);
    id = ++m_nextWatch;
    m_poolWatchers[id] = {context, std::move(listener)};
    m_poolFrameDue = true;
    wake = m_wake;
  }
  if (wake) wake();  // a step (idle or not) sends the first frame
  return id;
}

void RequestRouter::unwatchPool(int watch) {
  std::lock_guard lock(m_mutex);
  m_poolWatchers.erase(watch);
  if (m_poolWatchers.empty()) m_poolEvents.clear();
}

void RequestRouter::setPoolControl(PoolControl control) {
  std::lock_guard lock(m_mutex);
  m_poolControl = std::move(control);
}

bool RequestRouter::control(const PoolControlRequest& request) {
  PoolControl control;
  {
    std::lock_guard lock(m_mutex);
    control = m_poolControl;
  }
  if (!control) return false;
  control(request);  // the owner queues it to its engine thread
  return true;
}

uint64_t RequestRouter::numKvEvents() const {
  std::lock_guard lock(m_mutex);
  return m_numKvEvents;
}

// Engine thread, under the lock: the snapshot is the engine's own, read between steps.
void RequestRouter::deliverPoolLocked() {
  if (m_poolWatchers.empty() || !m_engine || (m_poolEvents.empty() && !m_poolFrameDue)) return;
  auto frame = std::make_shared<PoolWatchFrame>();
  frame->step = m_stats.num_steps;
  frame->events = std::move(m_poolEvents);
  m_poolEvents.clear();
  frame->snapshot = m_engine->snapshot();
  std::set<pagedchat::SequenceId> seqs;
  for (const auto* blocks : {&frame->snapshot.blocks, &frame->snapshot.host_blocks})
    for (const pagedchat::KvBlockInfo& b : *blocks) seqs.insert(b.owners.begin(), b.owners.end());
  for (pagedchat::SequenceId id : seqs)
    if (std::optional<pagedchat::SequenceView> view = m_engine->sequence(id)) {
      const pagedchat::RequestId request = m_tracker.request_of(id);
      const auto route = m_routes.find(request);
      frame->sequences.push_back({id, request, view->num_stored, std::move(view->block_table),
                                  route != m_routes.end() ? route->second.responseId : QString()});
    }
  m_poolFrameDue = false;
  std::shared_ptr<const PoolWatchFrame> shared = std::move(frame);
  for (const auto& [id, w] : m_poolWatchers) {
    std::lock_guard slotLock(w.slot->mutex);
    w.slot->frame = shared;  // a frame not yet taken is replaced: its events are lost, its snapshot superseded
    if (std::exchange(w.slot->queued, true)) continue;
    QMetaObject::invokeMethod(w.context, [listener = w.listener, slot = w.slot] {
      std::shared_ptr<const PoolWatchFrame> frame;
      {
        std::lock_guard slotLock(slot->mutex);
        frame = std::move(slot->frame);
        slot->queued = false;
      }
      if (frame) listener(frame);
    }, Qt::QueuedConnection);
  }
}

void RequestRouter::deliverLocked() {
  if (m_engine) m_stats = m_engine->stats();
  deliverPoolLocked();
  for (RequestUpdate& update : m_tracker.take_updates()) {
    auto it = m_routes.find(update.id);
    if (it == m_routes.end()) continue;
    const bool done = update.done;
    QMetaObject::invokeMethod(it->second.context, [listener = it->second.listener, update = std::move(update)] { listener(update); },
                              Qt::QueuedConnection);
    if (!done) continue;
    m_tracker.forget(it->first);
    m_routes.erase(it);
  }
}

void RequestRouter::failAllLocked(const std::string& message) {
  for (const auto& [id, r] : m_routes) {
    m_tracker.fail(id, message);
    if (m_engine) m_engine->abort(id);
  }
}
