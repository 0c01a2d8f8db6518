#pragma once
// A vLLM server's KV cache drawn by our pool view (View > Watch a remote pool > vLLM KV events):
// its ZeroMQ KV events (remote/vllm_kv_subscriber.h) read on a thread of their own and applied
// in order to a VllmCacheMirror (remote/vllm_cache_mirror.h), whose picture goes to the UI
// thread as PoolFrames: every stored block a cached cell in the slot the mirror gave it, coloured
// by its prefix chain ("prefix 3"), each store an allocate flash and each removal an evict one.
// The mirror is exact whatever the view's pace; only flashes past kMaxChanges a frame are dropped.
// What vLLM's events cannot say (in use or only cached, ref counts, sharing, the pool's size) is
// not drawn: see docs/DESIGN.md.

#include <QObject>
#include <QString>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "remote/vllm_cache_mirror.h"
#include "appcore/pool/pool_frame.h"

class VllmPoolWatcher : public QObject {
  Q_OBJECT
 public:
  static constexpr size_t kMaxChanges = 4096;

  explicit VllmPoolWatcher(QObject* parent = nullptr);
  ~VllmPoolWatcher() override;  // stops the watch and waits for its thread

  // endpoint: vLLM's publisher ("tcp://host:5557"); replay: its replay socket, or empty.
  void start(const QString& endpoint, const QString& replay);
  void stop();
  bool isWatching() const { return m_thread.joinable(); }
  QString endpoint() const { return m_endpoint; }

  // The mirror's picture, with these changes as the frame's events (batches: its step number).
  static PoolFrame frameOf(const pagedchat::remote::VllmCacheMirror& mirror,
                           const std::vector<pagedchat::remote::VllmMirrorChange>& changes, int64_t batches);

 signals:
  void frame(const PoolFrame& frame);
  void note(const QString& sentence);  // batches lost, or one that would not decode
  void stopped(const QString& why);    // empty: stopped by the user

 private:
  struct Shared;
  std::thread m_thread;
  std::shared_ptr<std::atomic<bool>> m_stop;
  int m_generation = 0;  // which watch a queued frame came from: an earlier one's are dropped
  QString m_endpoint;
};
