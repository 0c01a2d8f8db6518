// Per-connection reading, timeouts and the connection cap of the API.
#include "server/http/connection_guard.h"

#include <QTcpSocket>
#include <QTimer>

#include <sys/resource.h>

#include <algorithm>

#include "server/api/api_error.h"
#include "server/http/http_reply.h"
#include "server/http/request_framing.h"

namespace {

constexpr int kDrainIdleMs = 2000;   // a draining connection closes after this quiet
constexpr int kDrainMaxMs = 10000;   // and after this in any case
constexpr int kAcceptRetryMs = 200;  // after accept() failed (out of descriptors)
constexpr const char* kStateName = "pagedchat_connection";

// What the guard knows of one connection: where in a request its bytes are, and which timer runs.
class Connection : public QObject {
 public:
  enum class Phase { between, head, body, chunked };
  enum class Timer { none, read, idle };

  Connection(QTcpSocket* socket, ConnectionLimits limits) : QObject(socket), limits(limits) {
    setObjectName(QString::fromLatin1(kStateName));
    timer.setSingleShot(true);
  }

  const ConnectionLimits limits;  // a copy: Qt's server may keep a socket past the guard
  Phase phase = Phase::between;
  QByteArray head;       // the head read so far
  qint64 bodyLeft = 0;   // body: bytes still to come; chunked: bytes still allowed
  int numOwed = 0;       // requests parsed whose response is not written yet
  Timer running = Timer::none;
  QTimer timer{this};
};

Connection* connectionOf(QTcpSocket* socket) {
  return socket ? static_cast<Connection*>(socket->findChild<QObject*>(QString::fromLatin1(kStateName), Qt::FindDirectChildrenOnly))
                : nullptr;
}

// A request being read runs against the read timeout from its first byte; a connection with a
// response owed has none (generation may take long: the session bounds a slow reader); one with
// nothing in flight runs the idle timeout.
void updateTimer(Connection& c) {
  const ConnectionLimits& limits = c.limits;
  const Connection::Timer want = c.phase != Connection::Phase::between ? Connection::Timer::read
                                 : c.numOwed > 0                       ? Connection::Timer::none
                                                                       : Connection::Timer::idle;
  if (want == c.running && (want != Connection::Timer::idle || c.timer.isActive())) return;
  c.running = want;
  if (want == Connection::Timer::none) c.timer.stop();
  else c.timer.start(want == Connection::Timer::read ? limits.readTimeoutMs : limits.idleTimeoutMs);
}

}  // namespace

int defaultMaxConnections() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 1024;
  return static_cast<int>(std::clamp<rlim_t>(limit.rlim_cur > 64 ? limit.rlim_cur - 64 : 8, 8, 1024));
}

ConnectionGuard::ConnectionGuard(ConnectionLimits limits, QObject* parent) : QTcpServer(parent), m_limits(limits) {
  // Qt 6.4 takes accept()'s EMFILE for a passing error and polls again at once: out of
  // descriptors, the server would spin at full CPU while no client gets in (measured: 4,200
  // failed accepts a second). So the cap stays below the descriptor limit whatever was asked:
  // past it connections are accepted and answered 503, and accept() never runs out.
  const int ceiling = defaultMaxConnections();
  if (m_limits.maxConnections > ceiling)
    qWarning("pagedchat: --max-connections %d is above what the descriptor limit allows; using %d", m_limits.maxConnections, ceiling);
  if (m_limits.maxConnections <= 0 || m_limits.maxConnections > ceiling) m_limits.maxConnections = ceiling;
  // Other failures (a system-wide descriptor shortage): Qt pauses accepting; try again a little
  // later, neither spinning nor staying deaf.
  connect(this, &QTcpServer::acceptError, this, [this](QAbstractSocket::SocketError) {
    QTimer::singleShot(kAcceptRetryMs, this, [this] { resumeAccepting(); });
  });
}

void ConnectionGuard::requestParsed(QTcpSocket* socket) {
  Connection* c = connectionOf(socket);
  if (!c) return;
  ++c->numOwed;
  if (c->phase == Connection::Phase::chunked) c->phase = Connection::Phase::between;  // its end is known now
  updateTimer(*c);
}

void ConnectionGuard::responseWritten(QTcpSocket* socket) {
  Connection* c = connectionOf(socket);
  if (!c) return;
  c->numOwed = std::max(c->numOwed - 1, 0);
  updateTimer(*c);
}

// Connected before the HTTP server connects its own reader, so the guard sees each byte first:
// each readyRead the HTTP parser reads everything available, so what is available now is new.
void ConnectionGuard::incomingConnection(qintptr handle) {
  if (numConnections() >= m_limits.maxConnections) return refuseOverCap(handle);
  auto* socket = new QTcpSocket(this);
  if (!socket->setSocketDescriptor(handle)) {
    delete socket;
    return;
  }
  m_open.insert(socket);
  connect(socket, &QObject::destroyed, this, [this, socket] { m_open.remove(socket); });
  auto* c = new Connection(socket, m_limits);
  connect(&c->timer, &QTimer::timeout, socket, [this, socket] { onTimeout(socket); });
  connect(socket, &QTcpSocket::readyRead, this, [this, socket] { onReadyRead(socket); });
  updateTimer(*c);
  addPendingConnection(socket);
}

void ConnectionGuard::refuseOverCap(qintptr handle) {
  ++m_numRefused;
  auto* socket = new QTcpSocket(this);
  if (!socket->setSocketDescriptor(handle)) {
    delete socket;
    return;
  }
  const ApiError error(503, QStringLiteral("the server has %1 connections open, its limit; retry later").arg(numConnections()),
                       QStringLiteral("server_error"), {}, QStringLiteral("too_many_connections"));
  writeHttpResponse(socket, 503, "application/json", error.toJson(), {{"Connection", "close"}, {"Retry-After", "1"}});
  connect(socket, &QTcpSocket::disconnected, socket, &QObject::deleteLater);
  socket->disconnectFromHost();
  QTimer::singleShot(kDrainIdleMs, socket, [socket] { socket->abort(); socket->deleteLater(); });
}

void ConnectionGuard::onReadyRead(QTcpSocket* socket) {
  Connection* c = connectionOf(socket);
  if (!c) return;
  const QByteArray fresh = socket->peek(socket->bytesAvailable());
  qsizetype at = 0;
  while (at < fresh.size()) {
    switch (c->phase) {
      case Connection::Phase::between:
        c->phase = Connection::Phase::head;
        c->head.clear();
        break;
      case Connection::Phase::head: {
        const qsizetype before = c->head.size();
        c->head.append(fresh.constData() + at, fresh.size() - at);
        const qsizetype from = std::max<qsizetype>(before - 3, 0);
        const qsizetype found = headEnd(QByteArrayView(c->head).sliced(from));
        if (found < 0) {
          if (c->head.size() > m_limits.maxHeadBytes)
            return refuse(socket, ApiError(431, QStringLiteral("the request's headers are larger than %1 bytes").arg(m_limits.maxHeadBytes),
                                           QStringLiteral("invalid_request_error"), {}, QStringLiteral("headers_too_large")));
          at = fresh.size();
          break;
        }
        const qsizetype end = from + found;
        if (end > m_limits.maxHeadBytes)
          return refuse(socket, ApiError(431, QStringLiteral("the request's headers are larger than %1 bytes").arg(m_limits.maxHeadBytes),
                                         QStringLiteral("invalid_request_error"), {}, QStringLiteral("headers_too_large")));
        at += end - before;
        c->head.truncate(end);
        RequestHead head;
        if (auto error = checkRequestHead(c->head, m_limits.maxBodyBytes, head)) return refuse(socket, *error);
        if (head.expectContinue) socket->write("HTTP/1.1 100 Continue\r\n\r\n");
        // What this request's response must do (server/http/http_reply.h): the request in flight is this one.
        queueResponseNeeds(socket, head.closeAfter, head.http10);
        c->head.clear();
        if (head.chunked) {
          c->phase = Connection::Phase::chunked;
          c->bodyLeft = m_limits.maxBodyBytes + m_limits.maxHeadBytes;  // the chunks' framing counts too
        } else if (head.contentLength > 0) {
          c->phase = Connection::Phase::body;
          c->bodyLeft = head.contentLength;
        } else {
          c->phase = Connection::Phase::between;
        }
        break;
      }
      case Connection::Phase::body: {
        const qint64 take = std::min<qint64>(c->bodyLeft, fresh.size() - at);
        c->bodyLeft -= take;
        at += take;
        if (c->bodyLeft == 0) c->phase = Connection::Phase::between;
        break;
      }
      case Connection::Phase::chunked:
        c->bodyLeft -= fresh.size() - at;
        at = fresh.size();
        if (c->bodyLeft < 0)
          return refuse(socket, ApiError(413, QStringLiteral("the request is larger than the limit of %1 bytes").arg(m_limits.maxBodyBytes),
                                         QStringLiteral("invalid_request_error"), {}, QStringLiteral("request_too_large")));
        break;
    }
  }
  updateTimer(*c);
}

void ConnectionGuard::onTimeout(QTcpSocket* socket) {
  Connection* c = connectionOf(socket);
  if (!c) return;
  if (c->running == Connection::Timer::idle) {
    socket->disconnectFromHost();
    return;
  }
  // A client this slow is not drained (it could keep a drain open forever): told, then closed.
  refuse(socket, ApiError(408, QStringLiteral("the request did not arrive within %1 s of its first byte").arg(m_limits.readTimeoutMs / 1000.0),
                          QStringLiteral("invalid_request_error"), {}, QStringLiteral("request_timeout")));
  socket->disconnectFromHost();
}

void ConnectionGuard::refuse(QTcpSocket* socket, const ApiError& error) {
  // The HTTP server's reader stops here (a slot disconnected during an emission is not called).
  disconnect(socket, &QTcpSocket::readyRead, nullptr, nullptr);
  if (Connection* c = connectionOf(socket)) {
    c->timer.stop();
    c->running = Connection::Timer::none;
  }
  writeHttpResponse(socket, error.status, "application/json", error.toJson(), {{"Connection", "close"}});
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
  // However slowly the client keeps sending, the drain ends.
  QTimer::singleShot(kDrainMaxMs, socket, [socket] { socket->abort(); });
}
