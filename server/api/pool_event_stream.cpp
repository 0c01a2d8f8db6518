#include "server/api/pool_event_stream.h"

#include <QTcpSocket>
#include <QTimer>

#include <algorithm>
#include <utility>

#include "server/http/http_reply.h"
#include "server/engine/request_router.h"

PoolEventStream::PoolEventStream(QTcpSocket* socket, RequestRouter& router, bool once, qint64 maxQueuedBytes, int slowReaderTimeoutMs)
    : m_socket(socket), m_router(router), m_once(once), m_maxQueuedBytes(maxQueuedBytes) {
  connect(socket, &QTcpSocket::disconnected, this, &QObject::deleteLater);
  connect(socket, &QObject::destroyed, this, &QObject::deleteLater);
  m_slowReader = new QTimer(this);
  m_slowReader->setSingleShot(true);
  m_slowReader->setInterval(slowReaderTimeoutMs);
  connect(m_slowReader, &QTimer::timeout, this, [this] {
    if (m_socket) m_socket->abort();  // nothing taken for too long: the connection goes
    deleteLater();
  });
  // The clock measures the client's progress, not the frames: any bytes it takes start it again,
  // an emptied buffer stops it. (Stopping it whenever a frame fitted let a client that never
  // reads stay connected for good when the last frames happened to fit under the limit.)
  connect(socket, &QTcpSocket::bytesWritten, this, [this] {
    if (m_socket && m_socket->bytesToWrite() > 0) m_slowReader->start();
    else m_slowReader->stop();
  });
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
  // Bytes wait for the client: it has the timeout to take some (m_slowReader).
  if (m_socket->bytesToWrite() > 0 && !m_slowReader->isActive()) m_slowReader->start();
}
