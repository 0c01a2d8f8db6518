// Routing and request admission of the OpenAI-compatible API.
#include "server/api/api_server.h"

#include <QDateTime>
#include <QDeadlineTimer>
#include <QHttpServerRequest>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPointer>
#include <QTcpSocket>
#include <QTimer>

#include <optional>
#include <utility>

#include "engine/chat/chat_model.h"
#include "engine/chat/reasoning.h"
#include "engine/engine/request.h"
#include "engine/grammar/gbnf.h"
#include "engine/grammar/grammar_cache.h"
#include "engine/kv/kv_manager.h"
#include "engine/model/model.h"
#include "server/api/api_error.h"
#include "server/http/connection_guard.h"
#include "server/api/completion_json.h"
#include "server/api/completion_session.h"
#include "server/api/pool_event_stream.h"
#include "server/engine/request_router.h"
#include "server/http/http_reply.h"

namespace {

using Method = QHttpServerRequest::Method;

// The grammars that force tool calls, by their text: one tool set's requests share their masks.
pagedchat::grammar::GrammarCache& toolGrammars() {
  static pagedchat::grammar::GrammarCache grammars;
  return grammars;
}

ApiError notFound(const QString& path) {
  return ApiError(404, QStringLiteral("no route for '%1'").arg(path), QStringLiteral("invalid_request_error"), {}, QStringLiteral("unknown_url"));
}

QString methodName(Method method) {
  switch (method) {
    case Method::Get: return QStringLiteral("GET");
    case Method::Post: return QStringLiteral("POST");
    case Method::Put: return QStringLiteral("PUT");
    case Method::Delete: return QStringLiteral("DELETE");
    case Method::Head: return QStringLiteral("HEAD");
    case Method::Options: return QStringLiteral("OPTIONS");
    case Method::Patch: return QStringLiteral("PATCH");
    default: return QStringLiteral("OTHER");
  }
}

ApiError loading() {
  return ApiError(503, QStringLiteral("the model is still loading; try again shortly"), QStringLiteral("server_error"), {}, QStringLiteral("model_loading"));
}

}  // namespace

ApiServer::ApiServer(ServerOptions options, RequestRouter& router, QObject* parent)
    : QAbstractHttpServer(parent), m_options(std::move(options)), m_router(router) {}

ApiServer::~ApiServer() {
  m_router.abandon(this);
  // The connections and the sessions call back into this server as they end (its counters, its
  // requestEnded signal): they end here, while it is whole, not in ~QObject once its members are
  // gone (UBSan caught a socket's disconnect reaching a session's end there, the app's API
  // switched off with a stream open).
  delete std::exchange(m_listener, nullptr);
  qDeleteAll(findChildren<CompletionSession*>(Qt::FindDirectChildrenOnly));
}

quint16 ApiServer::start() {
  auto* tcp = new ConnectionGuard(m_options.connection, this);
  if (!tcp->listen(m_options.host, m_options.port)) {
    delete tcp;
    return 0;
  }
  bind(tcp);
  m_listener = tcp;
  return tcp->serverPort();
}

int ApiServer::numSessions() const { return static_cast<int>(findChildren<CompletionSession*>(Qt::FindDirectChildrenOnly).size()); }

void ApiServer::shutdown(int graceMs, std::function<void()> done) {
  if (m_shuttingDown) return endSessions();  // asked twice: no more grace
  m_shuttingDown = true;
  m_shutdownDone = std::move(done);
  if (m_listener) m_listener->close();  // new connections are refused by the kernel
  // Polled: a session ends through deleteLater, whose moment no signal marks.
  auto* poll = new QTimer(this);
  connect(poll, &QTimer::timeout, this, [this, poll] {
    if (numSessions() > 0) return;
    poll->stop();
    finishShutdown();
  });
  poll->start(20);
  QTimer::singleShot(graceMs, this, [this] { endSessions(); });
}

void ApiServer::endSessions() {
  for (CompletionSession* session : findChildren<CompletionSession*>(Qt::FindDirectChildrenOnly)) session->endForShutdown();
}

// Every response is written to its socket: the sockets close once Qt has handed their bytes to
// the kernel (which sends them after the process is gone), a client that reads nothing is
// waited for a second at most.
void ApiServer::finishShutdown() {
  if (!m_shutdownDone) return;
  const QList<QTcpSocket*> sockets = m_listener ? m_listener->connections() : QList<QTcpSocket*>{};
  for (QTcpSocket* socket : sockets) socket->disconnectFromHost();
  auto* flush = new QTimer(this);
  connect(flush, &QTimer::timeout, this, [this, flush, deadline = QDeadlineTimer(1000)] {
    bool pending = false;
    for (QTcpSocket* socket : m_listener ? m_listener->connections() : QList<QTcpSocket*>{})
      pending |= socket->state() != QAbstractSocket::UnconnectedState && socket->bytesToWrite() > 0;
    if (pending && !deadline.hasExpired()) return;
    flush->stop();
    std::function<void()> done = std::move(m_shutdownDone);
    m_shutdownDone = nullptr;
    if (done) done();
  });
  flush->start(10);
}

void ApiServer::missingHandler(const QHttpServerRequest& request, QTcpSocket* socket) {
  writeError(socket, notFound(request.url().path()));
}

// Nothing a client sends may take the process down: every failure becomes an error response.
bool ApiServer::handleRequest(const QHttpServerRequest& request, QTcpSocket* socket) {
  ConnectionGuard::requestParsed(socket);
  LoggedRequest log;
  log.entry = ApiLogEntry{.at = QDateTime::currentDateTime(), .method = methodName(request.method()), .path = request.url().path()};
  log.since.start();
  socket->setProperty(kResponseStatusProperty, QVariant());
  try {
    route(request, socket, log);
  } catch (const ApiError& e) {
    writeError(socket, e);
  } catch (const std::bad_alloc&) {
    writeError(socket, ApiError(500, QStringLiteral("out of memory"), QStringLiteral("server_error")));
  } catch (const std::exception& e) {
    writeError(socket, ApiError(500, QString::fromUtf8(e.what()), QStringLiteral("server_error")));
  }
  if (!log.loggedAtEnd) {  // answered already (a watch stream: its head)
    log.entry.status = socket->property(kResponseStatusProperty).toInt();
    log.entry.durationMs = log.since.elapsed();
    emit requestEnded(log.entry);
  }
  return true;
}

void ApiServer::route(const QHttpServerRequest& request, QTcpSocket* socket, LoggedRequest& log) {
  const QString path = request.url().path();
  const Method method = request.method();
  // Before any route, /health included: a web page the user visits must not reach them.
  const QByteArray origin = request.value("Origin");
  if (auto refusal = checkHost(request.value("Host"), m_options.admission)) throw *refusal;
  if (auto refusal = checkOrigin(origin, m_options.admission)) throw *refusal;
  if (!origin.isEmpty()) socket->setProperty(kCorsOriginProperty, origin);  // every answer on it says it (http_reply.cpp)
  if (m_shuttingDown)
    throw ApiError(503, QStringLiteral("the server is shutting down"), QStringLiteral("server_error"), {}, QStringLiteral("shutting_down"));
  if (method == Method::Options) {  // a CORS preflight of an allowed origin
    writeHttpResponse(socket, 204, "text/plain", {}, origin.isEmpty() ? HttpHeaders{} : corsHeaders(origin, true));
    return;
  }
  auto expect = [&](Method m) {
    if (method != m)
      throw ApiError(405, QStringLiteral("'%1' does not accept this method").arg(path), QStringLiteral("invalid_request_error"));
  };
  if (path == QLatin1String("/health")) {
    expect(Method::Get);
    const bool ready = m_router.isLoaded();
    writeHttpResponse(socket, ready ? 200 : 503, "application/json", ready ? R"({"status":"ok"})" : R"({"status":"loading"})");
    return;
  }
  const int userKey = checkApiKey(request);
  if (request.body().size() > m_options.connection.maxBodyBytes)
    throw ApiError(413, QStringLiteral("the request body has %1 bytes; the limit is %2").arg(request.body().size()).arg(m_options.connection.maxBodyBytes),
                   QStringLiteral("invalid_request_error"), {}, QStringLiteral("request_too_large"));
  if (path == QLatin1String("/metrics")) {
    expect(Method::Get);
    ServerCounters counters = m_counters;
    counters.numActive = m_router.numActive();
    if (m_listener) {
      counters.numConnections = m_listener->numConnections();
      counters.numConnectionsRefused = m_listener->numRefused();
    }
    writeHttpResponse(socket, 200, "text/plain; version=0.0.4", prometheusText(m_router.stats(), counters));
  } else if (path == QLatin1String("/v1/models")) {
    expect(Method::Get);
    writeHttpResponse(socket, 200, "application/json", modelsJson(m_router.modelId(), QDateTime::currentSecsSinceEpoch()));
  } else if (path == QLatin1String("/v1/kv/events") || path == QLatin1String("/v1/kv/snapshot")) {
    // The pool, watched (server/api/pool_event_stream.h); behind the API key like every route but /health.
    expect(Method::Get);
    if (!m_router.isLoaded()) throw loading();
    auto* stream = new PoolEventStream(socket, m_router, path.endsWith(QLatin1String("snapshot")), m_options.connection.maxQueuedBytes,
                                       m_options.connection.slowReaderTimeoutMs);
    stream->setParent(this);
  } else if (path == QLatin1String("/v1/kv/control")) {
    expect(Method::Post);
    servePoolControl(request, socket);
  } else if (path == QLatin1String("/v1/chat/completions")) {
    expect(Method::Post);
    serveCompletion(request, socket, true, userKey, log);
  } else if (path == QLatin1String("/v1/completions")) {
    expect(Method::Post);
    serveCompletion(request, socket, false, userKey, log);
  } else {
    throw notFound(path);
  }
}

// POST /v1/kv/control {"action": "pause" | "resume" | "step" | "next_event", "steps": N}, or
// {"action": "reset", "kv_blocks": N, "host_blocks": H, "block_size": B, "max_context": C,
// "step_tokens": T} (a fresh pool for a lesson's scene, while no request is in flight; "reset" alone:
// the server's own pool again, at once or, while requests are in flight, once they have ended:
// answered {"ok":true,"deferred":true}): step mode on a server started with --allow-pool-control
// (403 otherwise).
void ApiServer::servePoolControl(const QHttpServerRequest& request, QTcpSocket* socket) {
  if (auto refusal = checkJsonContentType(request.value("Content-Type"))) throw *refusal;
  const QJsonObject o = QJsonDocument::fromJson(request.body()).object();
  PoolControlRequest control;
  control.action = o.value(QStringLiteral("action")).toString();
  control.steps = o.value(QStringLiteral("steps")).toInt(control.action == QLatin1String("next_event") ? 500 : 1);
  const QStringList actions{QStringLiteral("pause"), QStringLiteral("resume"), QStringLiteral("step"), QStringLiteral("next_event"),
                            QStringLiteral("reset")};
  if (!actions.contains(control.action))
    throw ApiError(400, QStringLiteral("'action' must be pause, resume, step, next_event or reset"), QStringLiteral("invalid_request_error"),
                   QStringLiteral("action"));
  if (control.steps < 1 || control.steps > 1000)
    throw ApiError(400, QStringLiteral("'steps' must be 1 to 1000"), QStringLiteral("invalid_request_error"), QStringLiteral("steps"));
  if (control.action == QLatin1String("reset") && o.contains(QStringLiteral("kv_blocks"))) {
    // A lesson's pool: small, so that its story runs out of memory in a few steps.
    auto field = [&](const char* name, int low, int high, int32_t* out) {
      const QJsonValue v = o.value(QLatin1String(name));
      const int n = v.toInt(-1);
      if (!v.isDouble() || n < low || n > high)
        throw ApiError(400, QStringLiteral("'%1' must be %2 to %3").arg(QLatin1String(name)).arg(low).arg(high),
                       QStringLiteral("invalid_request_error"), QLatin1String(name));
      *out = n;
    };
    PoolControlRequest::Shape& shape = control.shape;
    field("kv_blocks", 1, 65536, &shape.num_blocks);
    field("host_blocks", 0, 65536, &shape.num_host_blocks);
    field("block_size", 1, 32, &shape.block_size);
    field("max_context", 16, 1 << 20, &shape.max_context);
    field("step_tokens", 1, 1 << 16, &shape.max_batched_tokens);
    if (!pagedchat::is_valid_block_size(shape.block_size))
      throw ApiError(400, QStringLiteral("'block_size' must be %1").arg(QLatin1String(pagedchat::kValidBlockSizes)),
                     QStringLiteral("invalid_request_error"), QStringLiteral("block_size"));
  }
  const int inFlight = m_router.numActive();
  const bool lessonPool = control.shape.num_blocks > 0;
  if (control.action == QLatin1String("reset") && lessonPool && inFlight > 0)
    throw ApiError(409,
                   (inFlight == 1 ? QStringLiteral("a request is in flight")
                                  : QStringLiteral("%1 requests are in flight").arg(inFlight)) +
                       QStringLiteral(": the pool is reset only when none is"),
                   QStringLiteral("invalid_request_error"), {}, QStringLiteral("requests_in_flight"));
  if (!m_router.isLoaded()) throw loading();
  if (!m_router.control(control))
    throw ApiError(403, QStringLiteral("this server does not let clients step its engine (start it with --allow-pool-control)"),
                   QStringLiteral("permission_error"), {}, QStringLiteral("pool_control_off"));
  const bool deferred = control.action == QLatin1String("reset") && !lessonPool && inFlight > 0;
  writeHttpResponse(socket, 200, "application/json", deferred ? R"({"ok":true,"deferred":true})" : R"({"ok":true})");
}

int ApiServer::checkApiKey(const QHttpServerRequest& request) const {
  if (m_options.apiKey.isEmpty() && m_options.userKeys.isEmpty()) return -1;
  // The scheme's case does not matter (RFC 9110); the key's does.
  const QByteArray given = request.value("Authorization").trimmed();
  const qsizetype space = given.indexOf(' ');
  if (space > 0 && given.left(space).toLower() == "bearer") {
    const QByteArray key = given.mid(space + 1).trimmed();
    if (!m_options.apiKey.isEmpty() && key == m_options.apiKey.toUtf8()) return -1;
    for (qsizetype i = 0; i < m_options.userKeys.size(); ++i)
      if (key == m_options.userKeys[i].toUtf8()) return static_cast<int>(i);
  }
  throw ApiError(401, QStringLiteral("a valid API key is required (Authorization: Bearer KEY)"), QStringLiteral("invalid_request_error"), {},
                   QStringLiteral("invalid_api_key"));
}

void ApiServer::serveCompletion(const QHttpServerRequest& request, QTcpSocket* socket, bool chat, int userKey, LoggedRequest& log) {
  if (auto refusal = checkJsonContentType(request.value("Content-Type"))) throw *refusal;
  CompletionRequest parsed = chat ? parseChatCompletion(request.body(), m_options.limits)
                                  : parseTextCompletion(request.body(), m_options.limits);
  const QString modelId = m_router.modelId();
  if (parsed.model != modelId)
    throw ApiError(404, QStringLiteral("the model '%1' does not exist; this server has '%2'").arg(parsed.model, modelId),
                   QStringLiteral("invalid_request_error"), QStringLiteral("model"), QStringLiteral("model_not_found"));
  // Held for the request's parsing: the app may swap its model meanwhile.
  const std::shared_ptr<const pagedchat::ChatModel> chatModel = m_router.model();
  if (!chatModel) throw loading();
  const pagedchat::Model* model = &chatModel->model();

  pagedchat::Request engineRequest;
  for (size_t i = 0; i < parsed.promptTokens.size(); ++i) {
    if (parsed.promptTokens[i] >= model->config().vocab_size)
      throw ApiError::badRequest(QStringLiteral("token %1 is outside the vocabulary (%2 tokens)")
                                     .arg(parsed.promptTokens[i])
                                     .arg(model->config().vocab_size),
                                 QStringLiteral("prompt[%1]").arg(i));
  }
  for (const auto& [token, bias] : parsed.params.logit_bias)
    if (token >= model->config().vocab_size)
      throw ApiError::badRequest(QStringLiteral("logit_bias token %1 is outside the vocabulary (%2 tokens)").arg(token).arg(model->config().vocab_size),
                                 QStringLiteral("logit_bias"));
  std::optional<pagedchat::ToolFormat> toolFormat;
  if (chat && parsed.tools.tools) {
    // The model's own format when its template renders tools; else the generic one, whose
    // grammar keeps the reply a JSON object that parses (tool_calls.h).
    toolFormat = chatModel->chat_template().tool_format();
    try {
      const pagedchat::ToolSet::Grammar g = parsed.tools.tools->grammar(*toolFormat, parsed.tools.choice);
      if (!g.gbnf.empty())
        parsed.params.grammar = toolGrammars().get(g.root + "\n" + g.gbnf, [&] { return pagedchat::grammar::parse_gbnf(g.gbnf, g.root); });
    } catch (const pagedchat::Error& e) {
      throw ApiError::badRequest(QString::fromUtf8(e.what()), QStringLiteral("tools"));
    }
  }
  // A thinking model: its thinking apart from its answer (reasoning.h), capped when asked; a
  // grammar (a schema, forced calls) applies to the answer after it.
  const bool thinks = chat && chatModel->chat_template().thinks();
  const bool harmony = chat && chatModel->chat_template().harmony();
  std::optional<pagedchat::ReasoningSplitter> reasoning;  // set: the thinking goes apart, as reasoning_content
  if (parsed.reasoningBudget >= 0 && harmony)
    throw ApiError::badRequest(QStringLiteral("the model '%1' writes gpt-oss's harmony format, whose thinking is not capped here: "
                                              "'reasoning_effort' and 'thinking_budget_tokens' are not supported for it")
                                   .arg(modelId),
                               QStringLiteral("reasoning_effort"));
  if (parsed.reasoningBudget >= 0 && !thinks)
    throw ApiError::badRequest(QStringLiteral("the model '%1' does not think before it answers (its chat template has no <think>): "
                                              "'reasoning_effort' and 'thinking_budget_tokens' do not apply")
                                   .arg(modelId),
                               QStringLiteral("reasoning_effort"));
  if (chat) {
    try {
      pagedchat::PromptText text = chatModel->chat_template().apply(parsed.messages, true, toolFormat ? parsed.tools.tools.get() : nullptr);
      if (thinks) {
        bool inside = pagedchat::prompt_opens_thinking(text.str());
        // A model that opens its thinking itself (Qwen 3) is begun inside it when the engine must
        // know where the thinking ends: a grammar for the answer, or a budget.
        if (!inside && (parsed.params.grammar || parsed.reasoningBudget >= 0)) {
          text.markup(std::string(pagedchat::kThinkOpen) + "\n");
          inside = true;
        }
        if (inside) {
          parsed.params.reasoning_end = std::string(pagedchat::kThinkClose);
          parsed.params.reasoning_budget = parsed.reasoningBudget;
        }
        if (!parsed.reasoningRaw) reasoning.emplace(inside);  // reasoning_format none: the thinking stays in content
      }
      if (harmony) {
        // A grammar for the answer (a schema) holds from the final channel, whose opening the
        // prompt writes (the grammar cannot write markup): no analysis then. A forced call's
        // header is its forced prefix, below.
        auto start = pagedchat::HarmonySplitter::Start::kHeader;
        if (parsed.params.grammar && !toolFormat) {
          text.markup("<|channel|>final<|message|>");
          start = pagedchat::HarmonySplitter::Start::kInFinal;
        }
        if (!parsed.reasoningRaw) reasoning = pagedchat::ReasoningSplitter::harmony(start);
      }
      if (toolFormat) text.markup(pagedchat::ToolSet::forced_prefix(*toolFormat, parsed.tools.choice));  // Mistral's [TOOL_CALLS] when a call is forced
      engineRequest.prompt = chatModel->encode_prompt(text);
    } catch (const pagedchat::ChatTemplateError& e) {
      // The model's template refuses these messages (Gemma 2: "System role not supported").
      throw ApiError::badRequest(QString::fromStdString(e.what()), QStringLiteral("messages"));
    }
  } else if (!parsed.promptTokens.empty()) engineRequest.prompt = parsed.promptTokens;
  else engineRequest.prompt = model->encode_raw(parsed.prompt);  // the model's own format: specials parsed
  engineRequest.params = parsed.params;
  if (!parsed.hasSeed) engineRequest.params.seed = (static_cast<uint64_t>(m_seeds()) << 32) | m_seeds();
  engineRequest.n = parsed.n;
  // Prefix-cache isolation: the user's key (with several users), then the client's own salt.
  QByteArray salt;
  if (userKey >= 0) salt = "user-key " + m_options.userKeys[userKey].toUtf8() + '\n';
  if (!parsed.cacheSalt.isEmpty()) salt += "cache_salt " + parsed.cacheSalt.toUtf8();
  if (!salt.isEmpty()) engineRequest.cache_salt = pagedchat::cache_salt_of(std::string_view(salt.constData(), salt.size()));
  engineRequest.beam_width = parsed.beamWidth;
  engineRequest.length_penalty = parsed.lengthPenalty;
  const int64_t numPromptTokens = static_cast<int64_t>(engineRequest.prompt.size());

  ResponseHead head{QStringLiteral("%1-%2").arg(chat ? "chatcmpl" : "cmpl").arg(m_nextId++), QDateTime::currentSecsSinceEpoch(),
                    modelId, chat};
  auto* session = new CompletionSession(socket, head, parsed.n, parsed.stream, parsed.includeUsage, parsed.params.num_logprobs >= 0,
                                        numPromptTokens, m_router, m_counters, m_options.connection);
  session->setParent(this);  // a server that stops takes its sessions along
  if (toolFormat) session->setToolFormat(*toolFormat, pagedchat::ToolSet::forced_prefix(*toolFormat, parsed.tools.choice));
  if (reasoning) session->setReasoning(*reasoning);
  log.entry.stream = parsed.stream;
  session->setOnEnded([this, entry = log.entry, since = log.since](int status, const Usage& usage) mutable {
    entry.status = status;
    entry.promptTokens = usage.promptTokens;
    entry.completionTokens = usage.completionTokens;
    entry.cachedTokens = usage.cachedTokens;
    entry.durationMs = since.elapsed();
    emit requestEnded(entry);
  });
  QPointer<CompletionSession> guard(session);
  const pagedchat::RequestId id = m_router.submit(std::move(engineRequest), this, [guard](const RequestUpdate& update) {
    if (guard) guard->onUpdate(update);
  }, head.id);
  if (id < 0) {
    delete session;
    if (!m_router.isLoaded()) throw loading();
    throw ApiError(429, QStringLiteral("the server is busy (%1 requests in flight); retry later").arg(m_router.numActive()),
                   QStringLiteral("rate_limit_exceeded"), {}, QStringLiteral("queue_full"));
  }
  log.loggedAtEnd = true;
  session->start(id);
}

void ApiServer::writeError(QTcpSocket* socket, const ApiError& error) {
  ++m_counters.numRejected;
  // A client told to come back later is told when (RFC 6585): the queue moves within a second.
  HttpHeaders extra = error.status == 429 ? HttpHeaders{{"Retry-After", "1"}} : HttpHeaders{};
  if (m_shuttingDown) extra.append(qMakePair(QByteArray("Connection"), QByteArray("close")));
  if (socket) writeHttpResponse(socket, error.status, "application/json", error.toJson(), extra);
}
