// A turn with the chat's tools, between its replies: each call the last reply made waits for
// the user's consent (unless the user chose "Always allow" for that tool), runs on its MCP
// server, and its result (or why there is none) becomes a "tool" message; when every call of
// the reply has one, the turn goes on with the next reply. One call at a time, in the reply's
// order, so the conversation reads as the model asked. Stop ends the step (a running call is
// cancelled); so does the chat's limit of calls per turn, said in the chat.
#include "appcore/session/chat_controller.h"

#include <QJsonDocument>
#include <QLocale>

#include "appcore/chat/chat_database.h"
#include "appcore/tools/mcp_connection.h"
#include "appcore/tools/mcp_servers.h"

namespace {

// The most of a result the model reads: a tool that returns megabytes would fill the context
// (and be dropped whole by the context policy). The rest is cut, and the model told so.
constexpr qsizetype kMaxResultCharacters = 32 * 1024;

QString boundedResult(const QString& text) {
  if (text.size() <= kMaxResultCharacters) return text;
  return text.left(kMaxResultCharacters) +
         ChatController::tr("\n[The result was cut here: it has %1 characters, and a reply reads at most %2.]")
             .arg(QLocale::c().toString(text.size()), QLocale::c().toString(kMaxResultCharacters));
}

// The first call of the chat's last reply that has no answer yet, or null; `reply`: that reply.
const ToolCallRecord* unansweredCall(const QVector<MessageRecord>& messages, int* reply = nullptr) {
  for (int i = static_cast<int>(messages.size()) - 1; i >= 0; --i) {
    if (messages[i].role == QLatin1String("tool")) continue;
    if (messages[i].role != QLatin1String("assistant")) return nullptr;
    if (reply) *reply = i;
    for (const ToolCallRecord& call : messages[i].toolCalls) {
      bool answered = false;
      for (int k = i + 1; k < messages.size() && !answered; ++k) answered = messages[k].toolCallId == call.id;
      if (!answered) return &call;
    }
    return nullptr;
  }
  return nullptr;
}

QString callCount(int n) { return n == 1 ? ChatController::tr("1 tool call") : ChatController::tr("%1 tool calls").arg(n); }

}  // namespace

void ChatController::setTools(McpServers* servers) { m_tools = servers; }

bool ChatController::setChatTools(ChatId id, const ChatTools& tools) {
  auto it = m_chats.find(id);
  if (it == m_chats.end() || it->second.replying) return false;
  if (it->second.record.tools == tools) return true;
  it->second.record.tools = tools;
  save(it->second);
  emit chatChanged(id);
  measure(id);
  return true;
}

QString ChatController::offerTools(Chat& c, TurnSettings& settings) {
  c.toolTurn.reset();
  settings.toolsJson.clear();
  const QString forced = std::exchange(settings.toolChoice, QString());
  if (c.record.tools.servers.isEmpty()) return {};
  if (!m_tools) return tr("This window has no tool servers: this reply calls no tools.");
  if (settings.numSamples > 1 || !settings.columns.empty())
    return tr("A compare turn offers no tools: each of its replies would call them. This turn calls none.");
  const QString json = m_tools->toolsJson(c.record.tools.servers);
  if (json == QLatin1String("[]")) {
    QStringList waiting;
    for (const QString& name : c.record.tools.servers) {
      const McpConnection* server = m_tools->connection(name);
      waiting.append(!server ? tr("%1 is not in mcp.json").arg(name)
                     : server->state() == McpConnection::State::Failed ? server->failure()
                     : server->state() == McpConnection::State::Starting ? tr("%1 is starting").arg(name)
                     : server->tools().empty() ? tr("%1 has no tools").arg(name)
                                               : tr("%1 is off").arg(name));
    }
    return tr("No tool of this chat's servers is ready (%1): this reply calls none.").arg(waiting.join(QStringLiteral("; ")));
  }
  settings.toolsJson = json;
  c.toolTurn = settings;  // the replies after the calls choose for themselves
  if (!forced.isEmpty()) settings.toolChoice = forced;
  return {};
}

bool ChatController::beginToolCalls(Chat& c) {
  if (!c.toolTurn || c.toolStopRequested || !c.record.lastError.sentence.isEmpty()) return false;
  if (!unansweredCall(c.record.messages)) return false;
  save(c);
  measure(c.record.id);  // the blocks the reply holds now, while its calls wait
  nextToolCall(c);
  return true;
}

void ChatController::nextToolCall(Chat& c) {
  const ToolCallRecord* call = unansweredCall(c.record.messages);
  if (!call) {
    // Every call of the reply has its answer: the model reads them in its next reply.
    c.toolCall.reset();
    return startTurn(c, *c.toolTurn, {}, std::nullopt, /*toolsGoOn=*/true);
  }
  const int limit = c.record.tools.maxCallsPerTurn;
  if (c.toolCallsMade >= limit) {
    // Every call left is answered, so the conversation stays whole for the template.
    const PlainError stopped{tr("The reply stopped after %1, this chat's limit for one turn (its tool settings change it). "
                                "Send a message to go on.").arg(callCount(limit)), {}};
    abandonToolCalls(c, tr("Not run: the turn reached its limit of %1.").arg(callCount(limit)));
    c.record.lastError = stopped;
    emit status(c.record.id, QString());  // said in the chat
    return endTurn(c);
  }
  ++c.toolCallsMade;  // every call the model makes counts, run, denied or refused: a model that keeps asking ends
  const McpServers::Target target = m_tools ? m_tools->resolve(call->name, c.record.tools.servers) : McpServers::Target{};
  if (!target.connection || target.connection->state() != McpConnection::State::Ready) {
    answerCall(c, *call, target.connection ? tr("Error: the server of the tool '%1' is not ready (%2).").arg(call->name, target.connection->failure())
                                           : tr("Error: there is no tool named '%1'.").arg(call->name));
    return nextToolCall(c);
  }
  c.toolCall = Chat::ToolCallWait{call->id, target.connection->name(), target.tool, false, -1, target.connection, {}};
  if (m_tools->alwaysAllowed(c.toolCall->server, c.toolCall->tool)) return runToolCall(c);
  emit status(c.record.id, tr("The model asks to run %1 on %2: allow it or deny it in the chat.").arg(c.toolCall->tool, c.toolCall->server));
  emit chatChanged(c.record.id);
}

bool ChatController::answerToolCall(ChatId id, const QString& callId, ToolConsent consent) {
  auto it = m_chats.find(id);
  if (it == m_chats.end() || !it->second.toolCall || it->second.toolCall->running || it->second.toolCall->callId != callId)
    return false;
  Chat& c = it->second;
  if (consent == ToolConsent::deny) {
    answerCall(c, *unansweredCall(c.record.messages), tr("The user denied this call: it did not run."));
    c.toolCall.reset();
    nextToolCall(c);
    return true;
  }
  if (consent == ToolConsent::alwaysAllow && m_tools) m_tools->setAlwaysAllowed(c.toolCall->server, c.toolCall->tool, true);
  runToolCall(c);
  return true;
}

void ChatController::runToolCall(Chat& c) {
  const ToolCallRecord* call = unansweredCall(c.record.messages);
  McpConnection* connection = c.toolCall->connection;
  if (!call || !connection) {
    if (call) answerCall(c, *call, tr("Error: the tool's server went away before the call ran."));
    c.toolCall.reset();
    return nextToolCall(c);
  }
  c.toolCall->running = true;
  const ChatId id = c.record.id;
  // Once per server: its answers come to the chat whose call they name (onToolCall*).
  connect(connection, &McpConnection::callFinished, this, &ChatController::onToolCallFinished, Qt::UniqueConnection);
  connect(connection, &McpConnection::callFailed, this, &ChatController::onToolCallFailed, Qt::UniqueConnection);
  connect(connection, &McpConnection::callProgress, this, &ChatController::onToolCallProgress, Qt::UniqueConnection);
  connect(connection, &QObject::destroyed, this, &ChatController::onToolServerGone, Qt::UniqueConnection);
  c.toolCall->runId = connection->call(c.toolCall->tool, call->arguments);
  emit status(id, tr("Running %1 on %2…").arg(c.toolCall->tool, c.toolCall->server));
  emit chatChanged(id);
}

ChatController::Chat* ChatController::chatRunning(const McpConnection* connection, int runId) {
  for (auto& [id, c] : m_chats)
    if (c.toolCall && c.toolCall->running && c.toolCall->runId == runId && c.toolCall->connection == connection) return &c;
  return nullptr;
}

void ChatController::onToolCallFinished(int runId, const QString& text, bool isError, bool truncated) {
  QString content = isError ? tr("Error: %1").arg(text) : text;
  if (truncated) content += tr("\n[The server's result was cut: it was larger than a result may be.]");
  if (Chat* c = chatRunning(qobject_cast<McpConnection*>(sender()), runId)) toolCallEnded(*c, content);
}

void ChatController::onToolCallFailed(int runId, const QString& sentence) {
  if (Chat* c = chatRunning(qobject_cast<McpConnection*>(sender()), runId)) toolCallEnded(*c, tr("Error: %1").arg(sentence));
}

void ChatController::onToolCallProgress(int runId, double done, double total, const QString& message) {
  Chat* c = chatRunning(qobject_cast<McpConnection*>(sender()), runId);
  if (!c) return;
  c->toolCall->progress = !message.isEmpty() ? message : total > 0 ? tr("%1 of %2").arg(done).arg(total) : tr("%1 done").arg(done);
  emit chatChanged(c->record.id);
}

void ChatController::onToolServerGone() {
  // Its calls end with it (mcp.json reloaded, the app closing). After the deletion is over:
  // the next call may ask the servers, which are being changed now.
  QMetaObject::invokeMethod(this, [this] {
    for (auto& [id, c] : m_chats)
      if (c.toolCall && c.toolCall->running && !c.toolCall->connection)
        toolCallEnded(c, tr("Error: the tool's server was stopped during the call."));
  }, Qt::QueuedConnection);
}

void ChatController::toolCallEnded(Chat& c, const QString& content) {
  if (const ToolCallRecord* call = unansweredCall(c.record.messages)) answerCall(c, *call, content);
  c.toolCall.reset();
  if (c.toolStopRequested) {
    abandonToolCalls(c, tr("Not run: the user stopped the turn."));
    emit status(c.record.id, tr("Stopped: the calls left did not run."));
    return endTurn(c);
  }
  nextToolCall(c);
}

void ChatController::answerCall(Chat& c, const ToolCallRecord& call, const QString& content) {
  c.record.messages.append({.role = QStringLiteral("tool"), .content = boundedResult(content), .toolCallId = call.id, .toolName = call.name});
  save(c);
  emit chatChanged(c.record.id);
}

void ChatController::stopToolStep(Chat& c) {
  if (c.toolCall && c.toolCall->running && c.toolCall->connection) {
    c.toolCall->connection->stopCall(c.toolCall->runId);  // its callFailed ends the turn (toolCallEnded)
    return;
  }
  abandonToolCalls(c, tr("Not run: the user stopped the turn."));
  emit status(c.record.id, tr("Stopped: the calls left did not run."));  // not the consent question any more
  endTurn(c);
}

bool ChatController::abandonToolCalls(Chat& c, const QString& why) {
  if (c.toolCall && c.toolCall->running && c.toolCall->connection) c.toolCall->connection->stopCall(c.toolCall->runId);
  c.toolCall.reset();
  c.toolTurn.reset();
  bool answered = false;
  // Every call gets its answer, so the conversation stays whole for the model's template.
  while (const ToolCallRecord* left = unansweredCall(c.record.messages)) {
    c.record.messages.append({.role = QStringLiteral("tool"), .content = why, .toolCallId = left->id, .toolName = left->name});
    answered = true;
  }
  return answered;
}
