#pragma once
// A remote pagedchat-server's KV pool drawn by our pool view (View > Watch a remote pool): its
// frames (GET /v1/kv/events, server/api/pool_watch.h) read on a thread of their own, each turned
// into a PoolFrame (its snapshot, events and block tables; the panel's numbers come from the
// snapshot, the server's own counters are not sent) and handed to the UI thread. Sequences are named after the
// API request they serve ("request 12"). A watch that breaks says why (stopped()).

#include <QObject>
#include <QString>

#include <atomic>
#include <memory>
#include <thread>

#include "appcore/pool/pool_frame.h"

class RemotePoolWatcher : public QObject {
  Q_OBJECT
 public:
  explicit RemotePoolWatcher(QObject* parent = nullptr);
  ~RemotePoolWatcher() override;  // stops the watch and waits for its thread

  void start(const QString& url, const QString& apiKey);
  void stop();
  bool isWatching() const { return m_thread.joinable(); }
  QString url() const { return m_url; }

  // A frame's JSON as the server writes it, as a PoolFrame; false (and *error) when it is not one.
  static bool frameFromJson(const QByteArray& json, PoolFrame* frame, QString* error = nullptr);

 signals:
  void frame(const PoolFrame& frame);
  void stopped(const QString& why);  // empty: stopped by the user

 private:
  std::thread m_thread;
  std::shared_ptr<std::atomic<bool>> m_stop;
  int m_generation = 0;  // which watch a queued frame came from: an earlier one's are dropped
  QString m_url;
};
