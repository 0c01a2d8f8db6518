// Bounding what one request may make the server buffer.
#include "server/body_limit_guard.h"

#include <QTcpSocket>
#include <QTimer>

#include "server/api_error.h"
#include "server/http_reply.h"

namespace {

constexpr const char* kReceived = "pagedchat_received";  // bytes of the request being read
constexpr qint64 kHeaderRoom = 64 * 1024;                // request line and headers
constexpr int kDrainIdleMs = 2000;                       // a draining connection closes after this quiet

}  // namespace

BodyLimitGuard::BodyLimitGuard(qint64 maxBodyBytes, QObject* parent) : QTcpServer(parent), m_maxBytes(maxBodyBytes + kHeaderRoom) {}

void BodyLimitGuard::requestComplete(QTcpSocket* socket) {
  if (socket) socket->setProperty(kReceived, qint64(0));
}

// Connected before the HTTP server connects its own reader, so the count is taken first: each
// readyRead the HTTP parser reads everything available, so what is available now is new.
void BodyLimitGuard::incomingConnection(qintptr handle) {
  auto* socket = new QTcpSocket(this);
  if (!socket->setSocketDescriptor(handle)) {
    delete socket;
    return;
  }
  socket->setProperty(kReceived, qint64(0));
  connect(socket, &QTcpSocket::readyRead, this, [this, socket] { onReadyRead(socket); });
  addPendingConnection(socket);
}

void BodyLimitGuard::onReadyRead(QTcpSocket* socket) {
  const qint64 received = socket->property(kReceived).toLongLong() + socket->bytesAvailable();
  socket->setProperty(kReceived, received);
  if (received > m_maxBytes) startDraining(socket);
}

void BodyLimitGuard::startDraining(QTcpSocket* socket) {
  // The HTTP server's reader stops here (a slot disconnected during an emission is not called).
  disconnect(socket, &QTcpSocket::readyRead, nullptr, nullptr);
  ApiError error(413, QStringLiteral("the request is larger than the limit of %1 bytes").arg(m_maxBytes - kHeaderRoom),
                 QStringLiteral("invalid_request_error"), {}, QStringLiteral("request_too_large"));
  writeHttpResponse(socket, 413, "application/json", error.toJson(), {{"Connection", "close"}});
  auto* idle = new QTimer(socket);
  idle->setSingleShot(true);
  connect(idle, &QTimer::timeout, socket, &QTcpSocket::disconnectFromHost);
  auto drain = [socket, idle] {
    if (socket->isTransactionStarted()) socket->commitTransaction();  // drop what the parser kept
    socket->skip(socket->bytesAvailable());
    idle->start(kDrainIdleMs);
  };
  connect(socket, &QTcpSocket::readyRead, socket, drain);
  drain();
}
