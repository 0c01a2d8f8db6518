#pragma once
// The listening socket of the API and the guard on each connection, ahead of Qt's HTTP parser
// (Qt 6.4's server reads a whole request into memory before anyone sees it, has no timeouts and
// no connection cap). It reads each request's head as it arrives (request_framing.h) and:
// - refuses bad framing, an over-long head (431) and an over-large body (413, as soon as it is
//   declared or counted), then reads and drops the rest of the connection's bytes, closing it
//   when the client goes quiet, so a client still sending reads the error, not a reset;
// - answers Expect: 100-continue;
// - gives a request readTimeoutMs from its first byte to its last (slow-loris: 408, closed), and
//   closes a kept-alive connection idle for idleTimeoutMs with nothing in flight;
// - answers 503 and closes any connection past maxConnections, and when accept() fails (the
//   descriptor limit) tries again later instead of spinning.

#include <QSet>
#include <QTcpServer>

#include "server/http/connection_limits.h"

class QTcpSocket;
struct ApiError;

class ConnectionGuard : public QTcpServer {
  Q_OBJECT
 public:
  ConnectionGuard(ConnectionLimits limits, QObject* parent = nullptr);

  // Qt parsed a whole request on the socket (a response is owed), and the response to one was
  // written whole: between the two the connection has no timeout.
  static void requestParsed(QTcpSocket* socket);
  static void responseWritten(QTcpSocket* socket);

  int numConnections() const { return static_cast<int>(m_open.size()); }
  QList<QTcpSocket*> connections() const { return m_open.values(); }
  int maxConnections() const { return m_limits.maxConnections; }
  qint64 numRefused() const { return m_numRefused; }  // over the cap

 protected:
  void incomingConnection(qintptr handle) override;

 private:
  void onReadyRead(QTcpSocket* socket);
  void onTimeout(QTcpSocket* socket);
  void refuse(QTcpSocket* socket, const ApiError& error);
  void refuseOverCap(qintptr handle);

  ConnectionLimits m_limits;
  QSet<QTcpSocket*> m_open;  // accepted and not yet destroyed (Qt's server may reparent them)
  qint64 m_numRefused = 0;
};
