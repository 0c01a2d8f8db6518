#pragma once
// The hub search in the app: the words searched (models/hub_search.h) and a repository's GGUF
// files listed, each judged against this machine's free memory, off the UI thread. One
// question at a time: a new one cancels the one before, whose answer is then dropped.

#include <QObject>
#include <QString>
#include <QVector>

#include <atomic>
#include <memory>

#include "models/hub_search.h"

class QThread;

class HubFinder : public QObject {
  Q_OBJECT
 public:
  struct File {
    pagedchat::models::HubGgufFile file;
    pagedchat::models::FitCheck fit;
  };

  explicit HubFinder(QObject* parent = nullptr);
  ~HubFinder() override;  // cancels and waits for the thread

  void search(const QString& words);
  void listFiles(const QString& repo);
  bool isBusy() const { return m_thread != nullptr; }

 signals:
  void found(const QString& words, const QVector<pagedchat::models::HubRepo>& repos);
  void filesListed(const QString& repo, const QVector<HubFinder::File>& files);
  void failed(const QString& message);

 private:
  template <typename Job>
  void start(Job job);
  void finish(const std::shared_ptr<std::atomic<bool>>& cancel);

  QThread* m_thread = nullptr;
  std::shared_ptr<std::atomic<bool>> m_cancel;
};
