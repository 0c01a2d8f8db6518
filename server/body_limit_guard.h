#pragma once
// The listening socket of the API, with a guard on request size. Qt 6.4's HTTP server reads a
// whole request into memory before anyone sees it, so a client could make it buffer any
// amount. The guard counts what arrives on each connection ahead of the HTTP parser; past
// the limit (plus room for headers) it answers 413 at once and then reads and drops the rest
// of the connection's bytes (closing it when the client goes quiet), so memory stays bounded
// and a client still sending its body reads the 413 rather than a reset connection.

#include <QTcpServer>

class BodyLimitGuard : public QTcpServer {
  Q_OBJECT
 public:
  BodyLimitGuard(qint64 maxBodyBytes, QObject* parent = nullptr);

  // Called when a whole request was parsed: the next one on the connection counts from zero.
  static void requestComplete(QTcpSocket* socket);

 protected:
  void incomingConnection(qintptr handle) override;

 private:
  void onReadyRead(QTcpSocket* socket);
  void startDraining(QTcpSocket* socket);

  qint64 m_maxBytes;
};
