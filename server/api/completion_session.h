#pragma once
// One completion request in flight on its HTTP connection: turns the engine's updates into
// the OpenAI response, whole at the end or streamed as server-sent events (`data: {...}`
// chunks, then `data: [DONE]`). A client that hangs up has its request aborted at once, so
// its KV blocks are freed at the engine's next step. A client that stops reading its stream
// has its request held (ConnectionLimits::maxQueuedBytes), so what waits for it stays bounded,
// and aborted if it does not catch up in time. Lives on the server's thread and deletes itself
// when the response is written or the client is gone.

#include <QElapsedTimer>
#include <QObject>
#include <QPointer>
#include <QString>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/chat/reasoning.h"
#include "engine/chat/tool_calls.h"

#include "engine/engine/events.h"
#include "engine/engine/request.h"
#include "server/api/completion_json.h"
#include "server/http/connection_limits.h"

class QTcpSocket;
class QTimer;
struct ApiError;
class RequestRouter;
struct ServerCounters;
namespace pagedchat {
struct RequestUpdate;
}

class CompletionSession : public QObject {
  Q_OBJECT
 public:
  CompletionSession(QTcpSocket* socket, ResponseHead head, int numChoices, bool stream, bool includeUsage, bool wantLogprobs,
                    int64_t numPromptTokens, RequestRouter& router, ServerCounters& counters, const ConnectionLimits& limits);
  ~CompletionSession() override;

  // Called once, when the response has ended (written whole, the stream closed, or the client
  // gone: ApiLogEntry::kClientLeft), with its status and tokens: the request log's line.
  void setOnEnded(std::function<void(int status, const Usage& usage)> onEnded) { m_onEnded = std::move(onEnded); }
  // A request with tools: each reply is read back (special tokens written out) and split into
  // content and calls as `format` writes them; a stream sends content only up to where a call
  // may begin, and the calls whole at the end (delta.tool_calls). `prefix`: what the prompt
  // began the reply with (ToolSet::forced_prefix), read as the reply's start.
  void setToolFormat(pagedchat::ToolFormat format, std::string prefix);
  // A thinking model's reply: its thinking goes out as reasoning_content (streamed as
  // delta.reasoning_content), the answer as content, as `splitter` (fresh) reads each choice.
  void setReasoning(const pagedchat::ReasoningSplitter& splitter);
  // The engine accepted the request: a stream sends its headers and the role chunks now.
  void start(pagedchat::RequestId id);
  void onUpdate(const pagedchat::RequestUpdate& update);
  // The server is shutting down and the grace period is over: the request is aborted and the
  // client told (a stream: an error event, then [DONE]; whole: 503).
  void endForShutdown();

 private:
  void onDisconnected();
  void onToken(const pagedchat::EngineEvent& e);
  TokenLogprob logprobOf(const pagedchat::EngineEvent& e) const;
  void onFinished(int index, const QString& text, const QString& reason);
  void onToolToken(const pagedchat::EngineEvent& e);
  void onToolFinished(int index, const QString& reason);
  std::string toolReplyText(int index) const;  // the reply so far, special tokens written out, whole characters
  void onError(const QString& message);
  void complete();  // every choice finished: write the end of the response, then go
  void sendEvent(const QByteArray& json);
  void checkBacklog();  // holds the request or lets it go on, by what the client left unread
  void setHeld(bool held);
  void onSlowReader();
  void endWithError(const ApiError& error);
  Usage usage() const;
  void ended(int status);  // tells m_onEnded, once

  QPointer<QTcpSocket> m_socket;
  ResponseHead m_head;
  bool m_stream = false, m_includeUsage = false;
  int64_t m_numPromptTokens = 0, m_numCachedTokens = 0, m_numCompletionTokens = 0;
  RequestRouter& m_router;
  ServerCounters& m_counters;
  pagedchat::RequestId m_id = -1;
  std::vector<ChoiceResult> m_choices;
  std::vector<std::vector<TokenLogprob>> m_logprobs;  // per choice, when the request asked for them
  bool m_wantLogprobs = false;
  bool m_ended = false;
  qint64 m_maxQueuedBytes = 0;
  bool m_held = false;
  QTimer* m_holdTimer = nullptr;  // runs while held: past it, the client is given up
  QTimer* m_waitingTimer = nullptr;  // a stream's comment while its first token has not come
  QElapsedTimer m_accepted;          // since the engine took the request
  bool m_firstToken = false;
  void firstTokenCame();
  std::function<void(int, const Usage&)> m_onEnded;
  struct ToolReplyState {
    std::vector<int32_t> tokens;
    size_t streamed = 0;  // bytes of the reply's text sent as content
  };
  std::optional<pagedchat::ToolFormat> m_toolFormat;
  std::string m_toolPrefix;
  std::optional<pagedchat::ReasoningSplitter> m_reasoning;  // set: the reply's thinking is kept apart; fresh, copied per use
  std::vector<pagedchat::ReasoningSplitter> m_splitters;  // per choice, as the reply streams
  // The reply so far without its thinking, and the thinking (a tool reply is split whole).
  pagedchat::ReasoningSplitter::Delta splitWhole(const std::string& text, bool ended) const;
  std::vector<ToolReplyState> m_toolReplies;  // per choice
};
