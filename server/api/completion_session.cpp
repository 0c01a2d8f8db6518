// A completion request's response, whole or streamed.
#include "server/api/completion_session.h"

#include "server/api/api_request_log.h"

#include <QRandomGenerator>
#include <QTcpSocket>
#include <QTimer>

#include <algorithm>
#include <utility>

#include "engine/model/model.h"
#include "engine/tokenizer/utf8.h"
#include "server/api/api_error.h"
#include "server/engine/request_router.h"
#include "server/http/http_reply.h"
#include "server/api/metrics_text.h"

CompletionSession::CompletionSession(QTcpSocket* socket, ResponseHead head, int numChoices, bool stream, bool includeUsage,
                                     bool wantLogprobs, int64_t numPromptTokens, RequestRouter& router, ServerCounters& counters,
                                     const ConnectionLimits& limits)
    : m_socket(socket),
      m_head(std::move(head)),
      m_stream(stream),
      m_includeUsage(includeUsage),
      m_numPromptTokens(numPromptTokens),
      m_router(router),
      m_counters(counters),
      m_choices(static_cast<size_t>(numChoices)),
      m_logprobs(static_cast<size_t>(numChoices)),
      m_wantLogprobs(wantLogprobs),
      m_maxQueuedBytes(std::max<qint64>(limits.maxQueuedBytes, 1)),
      m_holdTimer(new QTimer(this)),
      m_waitingTimer(new QTimer(this)) {
  connect(socket, &QTcpSocket::disconnected, this, &CompletionSession::onDisconnected);
  connect(socket, &QTcpSocket::bytesWritten, this, &CompletionSession::checkBacklog);
  m_holdTimer->setSingleShot(true);
  m_holdTimer->setInterval(limits.slowReaderTimeoutMs);
  connect(m_holdTimer, &QTimer::timeout, this, &CompletionSession::onSlowReader);
  m_waitingTimer->setInterval(std::max(limits.waitingCommentMs, 10));
  connect(m_waitingTimer, &QTimer::timeout, this, [this] {
    // A comment line: clients skip it (the SSE format), but see the stream is alive. Not past
    // the unread limit: a client that reads nothing gets nothing more.
    if (m_socket && !m_ended && m_socket->bytesToWrite() <= m_maxQueuedBytes) writeChunk(m_socket, ": waiting for the first token\n\n");
  });
}

void CompletionSession::firstTokenCame() {
  if (std::exchange(m_firstToken, true)) return;
  m_waitingTimer->stop();
  const double waited = static_cast<double>(m_accepted.nsecsElapsed()) / 1e9;
  m_counters.firstTokenWaitSeconds += waited;
  ++m_counters.numFirstTokenWaits;
  m_counters.maxFirstTokenWaitSeconds = std::max(m_counters.maxFirstTokenWaitSeconds, waited);
}

CompletionSession::~CompletionSession() {
  if (m_held) --m_counters.numHeld;
}

void CompletionSession::start(pagedchat::RequestId id) {
  m_id = id;
  ++m_counters.numRequests;
  m_accepted.start();
  if (!m_socket || m_socket->state() != QAbstractSocket::ConnectedState) return onDisconnected();
  if (!m_stream) return;
  writeChunkedHead(m_socket, 200, "text/event-stream; charset=utf-8");
  m_waitingTimer->start();
  // OpenAI opens each chat choice with a chunk that carries only the role.
  if (m_head.chat)
    for (size_t i = 0; i < m_choices.size(); ++i) sendEvent(chunkJson(m_head, static_cast<int>(i), QString(), true, QString()));
}

void CompletionSession::onUpdate(const pagedchat::RequestUpdate& update) {
  if (m_ended) return;
  m_numCachedTokens = std::min(update.num_cached_prompt_tokens, std::max<int64_t>(m_numPromptTokens - 1, 0));
  for (const pagedchat::EngineEvent& e : update.events) {
    const QString text = QString::fromStdString(e.text);
    switch (e.kind) {
      case pagedchat::EngineEventKind::token:
        firstTokenCame();
        onToken(e);
        break;
      case pagedchat::EngineEventKind::finished: onFinished(e.index, text, QString::fromStdString(e.reason)); break;
      case pagedchat::EngineEventKind::error: return onError(QString::fromStdString(e.reason));
      case pagedchat::EngineEventKind::kv: break;
    }
  }
  if (update.done && !m_ended) complete();
  if (!m_ended) checkBacklog();
}

// Past maxQueuedBytes unread, the request stops being scheduled (its output waits in the engine,
// not here); once the client has read half of it, it goes on. Only streams queue: a whole
// response is written once, at the end.
void CompletionSession::checkBacklog() {
  if (m_ended || !m_socket || !m_stream || m_id < 0) return;
  const qint64 queued = m_socket->bytesToWrite();
  if (!m_held && queued > m_maxQueuedBytes) setHeld(true);
  else if (m_held && queued <= m_maxQueuedBytes / 2) setHeld(false);
}

void CompletionSession::setHeld(bool held) {
  m_held = held;
  m_router.hold(m_id, held);
  if (held) {
    ++m_counters.numSlowReaderHolds;
    ++m_counters.numHeld;
    m_holdTimer->start();
  } else {
    --m_counters.numHeld;
    m_holdTimer->stop();
  }
}

// The client did not catch up: its request is aborted and the connection dropped with what it
// left unread (closing gracefully would wait on that client for ever).
void CompletionSession::onSlowReader() {
  if (m_ended) return;
  m_ended = true;
  ++m_counters.numSlowReaderAborts;
  m_router.abort(m_id);
  if (m_socket) m_socket->abort();
  ended(ApiLogEntry::kClientLeft);
  deleteLater();
}

void CompletionSession::endForShutdown() {
  if (m_ended) return;
  if (m_id >= 0) m_router.abort(m_id);
  ++m_counters.numEndedByShutdown;
  endWithError(ApiError(503, QStringLiteral("the server is shutting down; the reply was cut short"), QStringLiteral("server_error"), {},
                        QStringLiteral("shutting_down")));
}

void CompletionSession::setToolFormat(pagedchat::ToolFormat format, std::string prefix) {
  m_toolFormat = format;
  m_toolPrefix = std::move(prefix);
  m_toolReplies.assign(m_choices.size(), {});
}

void CompletionSession::setReasoning(const pagedchat::ReasoningSplitter& splitter) {
  m_reasoning = splitter;
  m_splitters.assign(m_choices.size(), splitter);
}

pagedchat::ReasoningSplitter::Delta CompletionSession::splitWhole(const std::string& text, bool ended) const {
  if (!m_reasoning) return {{}, text};
  pagedchat::ReasoningSplitter splitter = *m_reasoning;
  pagedchat::ReasoningSplitter::Delta d = splitter.push(text);
  if (ended) {
    const pagedchat::ReasoningSplitter::Delta rest = splitter.finish();
    d.reasoning += rest.reasoning;
    d.content += rest.content;
  }
  return d;
}

void CompletionSession::onToken(const pagedchat::EngineEvent& e) {
  const int index = e.index;
  if (index < 0 || index >= static_cast<int>(m_choices.size())) return;
  if (m_toolFormat) return onToolToken(e);
  ++m_numCompletionTokens;
  ChoiceResult& c = m_choices[static_cast<size_t>(index)];
  QString text = QString::fromStdString(e.text);
  if (!m_splitters.empty()) {
    const pagedchat::ReasoningSplitter::Delta d = m_splitters[static_cast<size_t>(index)].push(e.text);
    if (!d.reasoning.empty()) {
      c.reasoning += QString::fromStdString(d.reasoning);
      if (m_stream) sendEvent(reasoningChunkJson(m_head, index, QString::fromStdString(d.reasoning)));
    }
    text = QString::fromStdString(d.content);
  }
  const int offset = static_cast<int>(c.text.size());
  c.text += text;
  if (!m_wantLogprobs) {
    if (m_stream && !text.isEmpty()) sendEvent(chunkJson(m_head, index, text, false, QString()));
    return;
  }
  TokenLogprob lp = logprobOf(e);
  m_logprobs[static_cast<size_t>(index)].push_back(lp);
  // Streamed with logprobs, every token gets its chunk, text held back or not.
  if (m_stream) sendEvent(chunkJson(m_head, index, text, false, QString(), tokenLogprobsJson(m_head.chat, {lp}, offset)));
}

TokenLogprob CompletionSession::logprobOf(const pagedchat::EngineEvent& e) const {
  TokenLogprob lp;
  lp.logprob = e.logprob;
  const std::shared_ptr<const pagedchat::ChatModel> model = m_router.model();
  auto piece = [model](int32_t id) {
    return model ? QByteArray::fromStdString(model->model().tokenizer->token_to_piece(id)) : QByteArray::number(id);
  };
  lp.piece = piece(e.token);
  for (const auto& [id, value] : e.top_logprobs) lp.top.emplace_back(piece(id), value);
  return lp;
}

void CompletionSession::onFinished(int index, const QString& text, const QString& reason) {
  if (index < 0 || index >= static_cast<int>(m_choices.size())) return;
  if (m_toolFormat) return onToolFinished(index, reason);
  ChoiceResult& c = m_choices[static_cast<size_t>(index)];
  QString rest = text;
  if (!m_splitters.empty()) {
    pagedchat::ReasoningSplitter& splitter = m_splitters[static_cast<size_t>(index)];
    pagedchat::ReasoningSplitter::Delta d = splitter.push(text.toStdString());
    const pagedchat::ReasoningSplitter::Delta end = splitter.finish();
    d.reasoning += end.reasoning;
    d.content += end.content;
    if (!d.reasoning.empty()) {
      c.reasoning += QString::fromStdString(d.reasoning);
      if (m_stream) sendEvent(reasoningChunkJson(m_head, index, QString::fromStdString(d.reasoning)));
    }
    rest = QString::fromStdString(d.content);
  }
  c.text += rest;
  if (m_wantLogprobs) c.logprobs = tokenLogprobsJson(m_head.chat, m_logprobs[static_cast<size_t>(index)], 0);
  // The engine's "abort" and "error" do not reach a client that is still listening as a
  // finish: an abort means the client left; an error comes with its error event.
  c.finishReason = reason == QLatin1String("length") ? QStringLiteral("length") : QStringLiteral("stop");
  if (!m_stream) return;
  if (!rest.isEmpty()) sendEvent(chunkJson(m_head, index, rest, false, QString()));
  sendEvent(chunkJson(m_head, index, QString(), false, c.finishReason));
}

namespace {

std::string newCallId(pagedchat::ToolFormat format) {
  return pagedchat::make_call_id(format, [](uint32_t n) { return QRandomGenerator::global()->bounded(n); });
}

// `text` without a last character whose bytes have not all come.
size_t wholeCharacters(const std::string& text) { return pagedchat::whole_utf8_prefix(text); }

std::string trimmedLeft(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r\n");
  return a == std::string::npos ? std::string() : s.substr(a);
}

}  // namespace

std::string CompletionSession::toolReplyText(int index) const {
  const std::shared_ptr<const pagedchat::ChatModel> model = m_router.model();
  if (!model) return {};
  std::string text = m_toolPrefix + model->model().tokenizer->decode(m_toolReplies[static_cast<size_t>(index)].tokens, true);
  text.resize(wholeCharacters(text));
  return text;
}

void CompletionSession::onToolToken(const pagedchat::EngineEvent& e) {
  const int index = e.index;
  ++m_numCompletionTokens;
  ToolReplyState& r = m_toolReplies[static_cast<size_t>(index)];
  r.tokens.push_back(e.token);
  if (m_wantLogprobs) {
    TokenLogprob lp = logprobOf(e);
    m_logprobs[static_cast<size_t>(index)].push_back(lp);
    if (m_stream) sendEvent(chunkJson(m_head, index, QString(), false, QString(), tokenLogprobsJson(true, {lp}, 0)));
  }
  if (!m_stream) return;
  const std::string text = splitWhole(toolReplyText(index), false).content;  // the thinking goes out at the end
  const size_t settled = pagedchat::settled_content(*m_toolFormat, text);
  if (settled <= r.streamed) return;
  sendEvent(chunkJson(m_head, index, QString::fromStdString(text.substr(r.streamed, settled - r.streamed)), false, QString()));
  r.streamed = settled;
}

void CompletionSession::onToolFinished(int index, const QString& reason) {
  ChoiceResult& c = m_choices[static_cast<size_t>(index)];
  ToolReplyState& r = m_toolReplies[static_cast<size_t>(index)];
  const pagedchat::ReasoningSplitter::Delta split = splitWhole(toolReplyText(index), true);
  const std::string& text = split.content;
  c.reasoning = QString::fromStdString(split.reasoning);
  if (m_stream && !split.reasoning.empty()) sendEvent(reasoningChunkJson(m_head, index, c.reasoning));
  // Harmony's calls are messages of their own, which the split leaves out: read from the whole text.
  const bool harmony = *m_toolFormat == pagedchat::ToolFormat::kHarmony;
  pagedchat::ToolReply reply = pagedchat::parse_tool_reply(*m_toolFormat, harmony ? toolReplyText(index) : text);
  for (pagedchat::ToolCall& call : reply.calls) call.id = newCallId(*m_toolFormat);  // ours, unique, whatever the model wrote
  c.text = QString::fromStdString(reply.content);
  c.toolCalls = reply.calls;
  if (m_wantLogprobs) c.logprobs = tokenLogprobsJson(true, m_logprobs[static_cast<size_t>(index)], 0);
  c.finishReason = reason == QLatin1String("length") ? QStringLiteral("length")
                   : !reply.calls.empty()            ? QStringLiteral("tool_calls")
                                                     : QStringLiteral("stop");
  if (!m_stream) return;
  // What the stream has not said of the content yet (it sent the reply's text as it came; the
  // content is that text trimmed, or in the generic format read out of its JSON).
  const std::string sent = trimmedLeft(text.substr(0, r.streamed));
  std::string rest;
  if (reply.content.starts_with(sent)) rest = reply.content.substr(sent.size());
  if (!rest.empty()) sendEvent(chunkJson(m_head, index, QString::fromStdString(rest), false, QString()));
  if (!reply.calls.empty()) sendEvent(toolCallsChunkJson(m_head, index, reply.calls, 0));
  sendEvent(chunkJson(m_head, index, QString(), false, c.finishReason));
}

void CompletionSession::onError(const QString& message) {
  // Refused by the engine (a prompt longer than the context or the pool) is the client's
  // request; a failed forward pass is ours.
  // The engine reports in words only; these are the phrases of its start_request checks.
  const bool ours = message.contains(QLatin1String("forward pass failed"));
  const bool unloaded = message.contains(QLatin1String("the model was unloaded"));  // RequestRouter::detach
  const bool tooLong = message.contains(QLatin1String("the context holds")) || message.contains(QLatin1String("KV blocks"));
  ApiError error = ours       ? ApiError(500, message, QStringLiteral("server_error"))
                   : unloaded ? ApiError(503, message, QStringLiteral("server_error"), {}, QStringLiteral("model_unloaded"))
                   : tooLong  ? ApiError::badRequest(message, m_head.chat ? QStringLiteral("messages") : QStringLiteral("prompt"),
                                                     QStringLiteral("context_length_exceeded"))
                              : ApiError::badRequest(message);
  endWithError(error);
}

void CompletionSession::endWithError(const ApiError& error) {
  m_ended = true;
  if (m_socket) {
    if (m_stream) {
      sendEvent(error.toJson());  // the client raises it as an APIError
      writeChunk(m_socket, "data: [DONE]\n\n");
      writeLastChunk(m_socket);
    } else {
      writeHttpResponse(m_socket, error.status, "application/json", error.toJson());
    }
  }
  ended(error.status);  // a stream said 200 first; the log says how it ended
  deleteLater();
}

void CompletionSession::complete() {
  m_ended = true;
  m_counters.numCachedPromptTokens += m_numCachedTokens;
  if (m_socket) {
    if (m_stream) {
      if (m_includeUsage) sendEvent(usageChunkJson(m_head, usage()));
      writeChunk(m_socket, "data: [DONE]\n\n");
      writeLastChunk(m_socket);
    } else {
      writeHttpResponse(m_socket, 200, "application/json", completionJson(m_head, m_choices, usage()));
    }
  }
  ended(m_socket ? 200 : ApiLogEntry::kClientLeft);
  deleteLater();
}

void CompletionSession::onDisconnected() {
  if (m_ended) return;
  m_ended = true;
  if (m_id >= 0) {
    m_router.abort(m_id);  // its blocks are freed at the engine's next step
      ++m_counters.numAborted;
  }
  ended(ApiLogEntry::kClientLeft);
  deleteLater();
}

void CompletionSession::ended(int status) {
  if (auto onEnded = std::exchange(m_onEnded, nullptr)) onEnded(status, usage());
}

void CompletionSession::sendEvent(const QByteArray& json) {
  if (m_socket) writeChunk(m_socket, "data: " + json + "\n\n");
}

Usage CompletionSession::usage() const { return {m_numPromptTokens, m_numCompletionTokens, m_numCachedTokens}; }
