#pragma once
// The OpenAI-compatible HTTP API on a RequestRouter (the headless EngineHost's, or the app's
// EngineBridge's, so API requests batch with the chats): routing, the API key, the body limit, and
// turning a parsed request into an engine request. Every response is JSON (errors in OpenAI's
// shape) except /metrics (Prometheus text) and streams (server-sent events).
//
//   GET  /health                200 {"status":"ok"} | 503 {"status":"loading"}
//   GET  /metrics               Prometheus text (KV blocks, prefix cache, queue, tokens)
//   GET  /v1/models             the one loaded model
//   POST /v1/chat/completions   chat, whole or streamed
//   POST /v1/completions        raw text continuation, whole or streamed

#include <QAbstractHttpServer>
#include <QElapsedTimer>
#include <QHostAddress>
#include <QString>

#include <functional>
#include <random>

#include "server/api/api_request_log.h"
#include "server/api/completion_request.h"
#include "server/http/connection_limits.h"
#include "server/api/metrics_text.h"
#include "server/http/request_admission.h"

class ConnectionGuard;
class RequestRouter;
struct ApiError;

struct ServerOptions {
  QHostAddress host = QHostAddress::LocalHost;  // loopback unless asked otherwise
  quint16 port = 8080;
  QString apiKey;                  // empty: no key asked (unless userKeys has some)
  // Keys of several users (--api-key-file): each user's requests get a cache salt of their own,
  // so one cannot learn from cached_tokens or timing what another sent.
  QStringList userKeys;
  ConnectionLimits connection;     // body and head sizes, timeouts, the connection cap, slow readers
  CompletionLimits limits;
  AdmissionPolicy admission;       // which Host names and browser Origins may call (request_admission.h)
};

class ApiServer : public QAbstractHttpServer {
  Q_OBJECT
 public:
  // The router must outlive the server.
  ApiServer(ServerOptions options, RequestRouter& router, QObject* parent = nullptr);
  // Listens on options.host:port; returns the port (useful with port 0) or 0 on failure.
  quint16 start();
  // Requests in flight are aborted (their blocks freed at the engine's next step).
  ~ApiServer() override;

  // A graceful end (SIGTERM): stops listening, answers new requests on open connections 503,
  // lets the requests in flight finish for up to graceMs, then ends the rest (a stream with an
  // error event and [DONE], a whole response with 503) and calls `done` once every response is
  // written. Calling it again ends the rest at once.
  void shutdown(int graceMs, std::function<void()> done);
  int numSessions() const;

 signals:
  // Each request, once its response has ended (a completion's when it is written or streamed
  // to its end, or its client left): the request log.
  void requestEnded(const ApiLogEntry& entry);

 protected:
  bool handleRequest(const QHttpServerRequest& request, QTcpSocket* socket) override;
  void missingHandler(const QHttpServerRequest& request, QTcpSocket* socket) override;

 private:
  // The request being handled, for its log line; a completion takes it along to its end.
  struct LoggedRequest {
    ApiLogEntry entry;
    QElapsedTimer since;
    bool loggedAtEnd = false;  // a completion logs itself when its response ends
  };
  void route(const QHttpServerRequest& request, QTcpSocket* socket, LoggedRequest& log);
  // The user key the request was made with (-1: the single --api-key, or no key asked); throws 401.
  int checkApiKey(const QHttpServerRequest& request) const;
  void servePoolControl(const QHttpServerRequest& request, QTcpSocket* socket);
  void serveCompletion(const QHttpServerRequest& request, QTcpSocket* socket, bool chat, int userKey, LoggedRequest& log);
  void writeError(QTcpSocket* socket, const ApiError& error);

  void endSessions();
  void finishShutdown();

  ServerOptions m_options;
  RequestRouter& m_router;
  ConnectionGuard* m_listener = nullptr;
  bool m_shuttingDown = false;
  std::function<void()> m_shutdownDone;
  ServerCounters m_counters;
  std::random_device m_seeds;  // a request without a seed samples differently each time
  int64_t m_nextId = 1;
};
