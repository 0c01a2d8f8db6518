#pragma once
// What one connection may cost the server (issue: clients that send slowly, never read, or
// open connections by the thousand). ConnectionGuard enforces the reading side and the count;
// CompletionSession the writing side.

#include <QtGlobal>

struct ConnectionLimits {
  qint64 maxBodyBytes = 1 << 20;       // a larger body gets 413 (declared: before it is sent)
  qint64 maxHeadBytes = 64 * 1024;     // request line and headers; more gets 431
  int readTimeoutMs = 15000;           // a request's head and body must arrive within this of its first byte (408)
  int idleTimeoutMs = 60000;           // a kept-alive connection with no request in flight closes after this
  int maxConnections = 0;              // open at once; more get 503 (0, or above the descriptor limit allows: defaultMaxConnections())
  // A streamed response's bytes the client has not read yet (beyond the kernel's buffer): past
  // this its request is held (not scheduled) until the client reads half of them, and past
  // slowReaderTimeoutMs of holding it is aborted and the connection closed.
  qint64 maxQueuedBytes = 1 << 20;
  int slowReaderTimeoutMs = 30000;
  // A stream whose first token has not come yet (waiting in the engine's queue, or its prompt
  // being computed) gets an SSE comment this often: its client can tell it from a dead server.
  int waitingCommentMs = 5000;
};

// The default connection cap, and the most a cap may be: below the process's descriptor limit
// with room for the server's own files, and at most 1024 (ConnectionGuard says why).
int defaultMaxConnections();
