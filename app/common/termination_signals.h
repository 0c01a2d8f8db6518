#pragma once
// SIGTERM and SIGINT as a Qt signal on the main thread: the handler only writes a byte to a pipe
// (all a signal handler may safely do), and a QSocketNotifier turns it into `requested`, so the
// server, or the app with its local API, can stop accepting and finish its requests in flight
// instead of dying mid-chunk. Shared by both executables (app/server, app/gui).

#include <QObject>

class QSocketNotifier;

class TerminationSignals : public QObject {
  Q_OBJECT
 public:
  explicit TerminationSignals(QObject* parent = nullptr);  // one per process
  ~TerminationSignals() override;

 signals:
  void requested(int signalNumber);  // each time one arrives

 private:
  QSocketNotifier* m_notifier = nullptr;
};
