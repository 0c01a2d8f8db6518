#include "server/pool_event_stream.h"

#include <QTcpSocket>
#include <QTimer>

#include <utility>

#include "server/http_reply.h"
#include "server/request_router.h"

PoolEventStream::PoolEventStream(QTcpSocket* socket, RequestRouter& router, bool once, qint64 maxQueuedBytes)
    : m_socket(socket), m_router(router), m_once(once), m_maxQueuedBytes(maxQueuedBytes) {
  connect(socket, &QTcpSocket::disconnected, this, &QObject::deleteLater);
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
  if (!m_socket || m_socket->state() != QAbstractSocket::ConnectedState) return deleteLater();
  if (m_once) {
    writeHttpResponse(m_socket, 200, "application/json", poolWatchJson(*frame));
    m_router.unwatchPool(std::exchange(m_watch, -1));
    return deleteLater();
  }
  if (m_socket->bytesToWrite() > m_maxQueuedBytes) return;  // a slow reader: this frame is skipped
  writeChunk(m_socket, "event: pool\ndata: " + poolWatchJson(*frame) + "\n\n");
}
