#include "server/api/pool_event_stream.h"

#include <QDateTime>
#include <QTcpSocket>
#include <QTimer>

#include <sys/ioctl.h>

#include <algorithm>
#include <utility>

#include "server/http/http_reply.h"
#include "server/engine/request_router.h"

PoolEventStream::PoolEventStream(QTcpSocket* socket, RequestRouter& router, bool once, qint64 maxQueuedBytes, int slowReaderTimeoutMs)
    : m_socket(socket), m_router(router), m_once(once), m_maxQueuedBytes(maxQueuedBytes) {
  connect(socket, &QTcpSocket::disconnected, this, &QObject::deleteLater);
  connect(socket, &QObject::destroyed, this, &QObject::deleteLater);
  m_slowReaderTimeoutMs = slowReaderTimeoutMs;
  m_lastProgressMs = QDateTime::currentMSecsSinceEpoch();
  connect(socket, &QTcpSocket::bytesWritten, this, [this](qint64 n) { m_toKernel += n; });
  m_slowReader = new QTimer(this);
  m_slowReader->setInterval(std::max(25, slowReaderTimeoutMs / 4));
  connect(m_slowReader, &QTimer::timeout, this, &PoolEventStream::checkSlowReader);
  m_slowReader->start();
  if (!m_once) {
    writeChunkedHead(socket, 200, "text/event-stream; charset=utf-8");
    m_keepAlive = new QTimer(this);
    m_keepAlive->setInterval(15000);
    connect(m_keepAlive, &QTimer::timeout, this, [this] {
      if (m_socket && m_socket->bytesToWrite() <= m_maxQueuedBytes) writeChunk(m_socket, ": idle\n\n");
    });
    m_keepAlive->start();
  }
  QPointer<PoolEventStream> self(this);
  m_watch = m_router.watchPool(this, [self](const std::shared_ptr<const PoolWatchFrame>& frame) {
    if (self) self->onFrame(frame);
  });
}

PoolEventStream::~PoolEventStream() { m_router.unwatchPool(m_watch); }

void PoolEventStream::onFrame(const std::shared_ptr<const PoolWatchFrame>& frame) {
  if (m_watch < 0) return;  // the snapshot's one response is written
  if (!m_socket || m_socket->state() != QAbstractSocket::ConnectedState) return deleteLater();
  const QByteArray& json = frame->json();
  if (m_once) {
    writeHttpResponse(m_socket, 200, "application/json", json);
    m_router.unwatchPool(std::exchange(m_watch, -1));
    return deleteLater();
  }
  // Behind by more than two frames (a large pool's frame is several MiB): this one is skipped.
  const qint64 limit = std::max(m_maxQueuedBytes, 2 * m_lastFrameBytes);
  if (m_socket->bytesToWrite() <= limit) {
    m_lastFrameBytes = json.size();
    writeChunk(m_socket, "event: pool\ndata: " + json + "\n\n");
  }
}

void PoolEventStream::checkSlowReader() {
  if (!m_socket) return;
  int queued = 0;  // in the kernel's send queue, not yet acknowledged by the peer
  if (::ioctl(static_cast<int>(m_socket->socketDescriptor()), TIOCOUTQ, &queued) != 0) queued = 0;
  const qint64 acknowledged = m_toKernel - queued;
  const qint64 now = QDateTime::currentMSecsSinceEpoch();
  if (acknowledged > m_acknowledged || m_socket->bytesToWrite() + queued == 0) m_lastProgressMs = now;
  m_acknowledged = std::max(m_acknowledged, acknowledged);
  if (now - m_lastProgressMs < m_slowReaderTimeoutMs) return;
  m_socket->abort();  // nothing taken for too long: the connection goes
  deleteLater();
}
