#pragma once
// One blocking job at a time off the UI thread, for an appcore object (a model download, a
// quantization, the quantization lesson's measurement): the job runs on a thread of its own
// with a cancel flag, and what it posts runs on the owner's thread, queued, and only while the
// owner lives (the owner holds the WorkerThread, whose destructor cancels and waits). The
// job's last word goes through `finish`, which joins the thread before it runs, so the owner is
// no longer running by then and may start again.

#include <QObject>
#include <QPointer>

#include <atomic>
#include <functional>
#include <memory>

class QThread;

class WorkerThread {
 public:
  using Post = std::function<void(std::function<void()> onOwnerThread)>;
  using Job = std::function<void(const std::atomic<bool>& cancel, const Post& post, const Post& finish)>;

  explicit WorkerThread(QObject* owner) : m_owner(owner) {}
  ~WorkerThread();  // cancels and waits
  WorkerThread(const WorkerThread&) = delete;
  WorkerThread& operator=(const WorkerThread&) = delete;

  void start(Job job);  // ignored while one runs
  void cancel();
  bool isRunning() const { return m_thread != nullptr; }

 private:
  void join();

  QObject* m_owner;
  QThread* m_thread = nullptr;
  std::shared_ptr<std::atomic<bool>> m_cancel;
};
