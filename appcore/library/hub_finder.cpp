// Hub questions on a thread of their own.
#include "appcore/library/hub_finder.h"

#include <QMetaObject>
#include <QPointer>
#include <QThread>

#include "models/hf_hub.h"

namespace {
constexpr int kResults = 30;  // repositories a search lists
}  // namespace

HubFinder::HubFinder(QObject* parent) : QObject(parent) {}

HubFinder::~HubFinder() {
  if (m_cancel) m_cancel->store(true);
  if (m_thread) {
    m_thread->wait();
    delete m_thread;
  }
}

void HubFinder::search(const QString& words) {
  start([words](const std::atomic<bool>* cancel, auto post) {
    const auto repos = pagedchat::models::search_hub(words.toStdString(), kResults, pagedchat::models::hub_endpoint(), cancel);
    const QVector<pagedchat::models::HubRepo> out(repos.begin(), repos.end());
    post([words, out](HubFinder& f) { emit f.found(words, out); });
  });
}

void HubFinder::listFiles(const QString& repo) {
  start([repo](const std::atomic<bool>* cancel, auto post) {
    const auto files = pagedchat::models::list_hub_gguf_files(repo.toStdString(), pagedchat::models::hub_endpoint(), cancel);
    const uint64_t memory = pagedchat::models::available_memory();
    QVector<File> out;
    for (const auto& f : files) out.append({f, pagedchat::models::check_fit(f, memory)});
    post([repo, out](HubFinder& f) { emit f.filesListed(repo, out); });
  });
}

// The job runs on a new thread; the one before is cancelled first and left to end on its own
// (its answer is dropped: its cancel flag is no longer the current one).
template <typename Job>
void HubFinder::start(Job job) {
  if (m_cancel) m_cancel->store(true);
  if (m_thread) {
    m_thread->wait();  // a cancelled request ends within a moment (libcurl checks the flag)
    delete m_thread;
    m_thread = nullptr;
  }
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  m_cancel = cancel;
  QPointer<HubFinder> self(this);
  auto post = [self, cancel](auto f) {
    QMetaObject::invokeMethod(self.data(), [self, cancel, f] {
      if (!self || cancel->load()) return;
      self->finish(cancel);
      f(*self);
    }, Qt::QueuedConnection);
  };
  m_thread = QThread::create([job = std::move(job), cancel, post] {
    try {
      job(cancel.get(), post);
    } catch (const pagedchat::models::DownloadCancelled&) {
      // a newer question took its place
    } catch (const std::exception& e) {
      const QString message = QString::fromUtf8(e.what());
      post([message](HubFinder& f) { emit f.failed(message); });
    }
  });
  m_thread->start();
}

void HubFinder::finish(const std::shared_ptr<std::atomic<bool>>& cancel) {
  if (cancel != m_cancel || !m_thread) return;
  m_thread->wait();
  delete m_thread;
  m_thread = nullptr;
}
