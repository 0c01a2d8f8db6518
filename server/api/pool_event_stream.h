#pragma once
// GET /v1/kv/events: the pool's frames (server/api/pool_watch.h) streamed to one client as
// server-sent events ("event: pool", then the frame's JSON), for as long as it stays connected;
// GET /v1/kv/snapshot: the next frame, as one JSON response. A client that reads too slowly
// loses frames, never grows the server: past maxQueuedBytes unread, frames are dropped until it
// catches up (each frame holds the whole pool, so the next one it reads is complete; its step
// number shows the gap). Lives on the server's thread; deletes itself when the client goes.

#include <QObject>
#include <QPointer>

#include <memory>

struct PoolWatchFrame;
class QTcpSocket;
class QTimer;
class RequestRouter;

class PoolEventStream : public QObject {
  Q_OBJECT
 public:
  // once: the snapshot route (one frame, then the response ends).
  // slowReaderTimeoutMs: a stream whose client takes no byte of what waits for it for this long
  // is closed (it holds a connection and its buffer); a slow reader only loses frames.
  PoolEventStream(QTcpSocket* socket, RequestRouter& router, bool once, qint64 maxQueuedBytes, int slowReaderTimeoutMs);
  ~PoolEventStream() override;

 private:
  void onFrame(const std::shared_ptr<const PoolWatchFrame>& frame);

  QPointer<QTcpSocket> m_socket;
  RequestRouter& m_router;
  bool m_once;
  qint64 m_maxQueuedBytes;
  int m_watch = -1;
  QTimer* m_keepAlive = nullptr;  // an idle pool sends no frames: a comment keeps the stream alive
  // The slow-reader check, every quarter of the timeout: what waits for the client counts the
  // kernel's send queue too (on loopback it grows to megabytes, and a client that never reads
  // left our own buffer empty, so it was never let go); progress is what the peer acknowledged.
  void checkSlowReader();
  QTimer* m_slowReader = nullptr;
  int m_slowReaderTimeoutMs = 0;
  qint64 m_toKernel = 0;        // bytes the socket handed to the kernel (bytesWritten)
  qint64 m_acknowledged = -1;   // of those, taken by the peer at the last check
  qint64 m_lastProgressMs = 0;  // when it last took some, or nothing waited
  qint64 m_lastFrameBytes = 0;
};
