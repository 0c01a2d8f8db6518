// A job on a thread of its own for an appcore object (see worker_thread.h).
#include "appcore/io/worker_thread.h"

#include <QMetaObject>
#include <QThread>

WorkerThread::~WorkerThread() {
  if (!m_thread) return;
  m_cancel->store(true);
  join();
}

void WorkerThread::cancel() {
  if (m_cancel) m_cancel->store(true);
}

void WorkerThread::join() {
  if (!m_thread) return;
  m_thread->wait();
  delete m_thread;
  m_thread = nullptr;
}

void WorkerThread::start(Job job) {
  if (m_thread) return;
  m_cancel = std::make_shared<std::atomic<bool>>(false);
  QPointer<QObject> owner(m_owner);
  // Queued onto the owner's thread; dropped when the owner has gone meanwhile.
  Post post = [owner](std::function<void()> f) {
    QMetaObject::invokeMethod(owner.data(), [owner, f = std::move(f)] {
      if (owner) f();
    }, Qt::QueuedConnection);
  };
  Post finish = [this, post](std::function<void()> f) {
    post([this, f = std::move(f)] {
      join();
      f();
    });
  };
  m_thread = QThread::create([job = std::move(job), flag = m_cancel, post, finish] { job(*flag, post, finish); });
  m_thread->start();
}
