#pragma once
// A chat as the UI keeps it and the database saves it: its messages (with each reply's
// metrics), the system prompt it overrides the shared one with, and where it was forked from.

#include <QString>
#include <QStringList>
#include <QVector>

#include <algorithm>
#include <optional>

#include "appcore/chat/chat_types.h"
#include "appcore/chat/plain_error.h"
#include "appcore/chat/reply_metrics.h"
#include "appcore/chat/reply_thinking.h"

// Each member has an initializer, so {.role = ..., .content = ...} leaves out the others
// without a -Wmissing-field-initializers warning.
struct MessageRecord {
  QString role{};  // "user", "assistant" or "tool" (the system prompt is kept apart)
  QString content{};  // a tool message: the tool's result (or why there is none), as the model reads it
  ReplyMetrics metrics{};  // replies only
  QVector<ToolCallRecord> toolCalls{};  // a reply's calls, in the order it made them
  QString toolCallId{};                 // a tool message: the call it answers
  QString toolName{};                   // a tool message: the function's name
  // Versions of the conversation from this message on (a regenerated reply, an edited
  // question): the others, each a whole tail (its first message here, then what followed it),
  // in the order they were made; this one is number versionIndex among them all (0-based).
  QVector<QVector<MessageRecord>> otherVersions{};
  int versionIndex = 0;
  int numVersions() const { return static_cast<int>(otherVersions.size()) + 1; }
};

// The conversation from messages[at] on becomes version `which` (0-based, among all of that
// message's versions); the one shown so far is kept among the others. Returns false (and
// changes nothing) when there is no such version.
inline bool switchVersion(QVector<MessageRecord>& messages, int at, int which) {
  if (at < 0 || at >= messages.size()) return false;
  QVector<QVector<MessageRecord>> all = std::move(messages[at].otherVersions);
  const int current = std::clamp(messages[at].versionIndex, 0, static_cast<int>(all.size()));
  if (which < 0 || which > all.size() || which == current) {
    messages[at].otherVersions = std::move(all);
    return false;
  }
  all.insert(current, messages.mid(at));
  QVector<MessageRecord> shown = all.takeAt(which);
  messages.resize(at);
  messages += shown;
  messages[at].otherVersions = std::move(all);
  messages[at].versionIndex = which;
  return true;
}

// Every version of the conversation from messages[at] on, the shown one in its place; the
// messages from `at` on are taken out. A new version then goes last: see ChatController.
inline QVector<QVector<MessageRecord>> takeVersions(QVector<MessageRecord>& messages, int at) {
  QVector<QVector<MessageRecord>> all = std::move(messages[at].otherVersions);
  messages[at].otherVersions.clear();
  all.insert(std::clamp(messages[at].versionIndex, 0, static_cast<int>(all.size())), messages.mid(at));
  messages.resize(at);
  return all;
}

// The last message when it is a reply that got no text: it goes, and when it was a new version
// (the last of its message's versions), the version before it is shown again. Returns whether
// it dropped one.
inline bool dropEmptyReply(QVector<MessageRecord>& messages) {
  if (messages.isEmpty() || messages.last().role != QLatin1String("assistant") || !messages.last().content.isEmpty() ||
      !messages.last().toolCalls.isEmpty())
    return false;
  const int at = static_cast<int>(messages.size()) - 1;
  if (messages[at].otherVersions.isEmpty()) {
    messages.removeLast();
    return true;
  }
  if (!switchVersion(messages, at, messages[at].versionIndex - 1)) return false;
  // The empty one was the last version: it is dropped from the others.
  QVector<QVector<MessageRecord>>& others = messages[at].otherVersions;
  if (!others.isEmpty() && others.last().size() == 1 && others.last().first().content.isEmpty() &&
      others.last().first().toolCalls.isEmpty())
    others.removeLast();
  return true;
}

// A reply the app did not see end: the app died mid-reply (a reply in flight is saved marked
// interrupted; before that was done it was saved with no finish reason), or its engine went.
// Its text is kept, marked interrupted; a reply with no text goes. Returns whether it changed.
inline bool settleInterruptedReply(QVector<MessageRecord>& messages) {
  if (messages.isEmpty() || messages.last().role != QLatin1String("assistant")) return false;
  QString& finish = messages.last().metrics.finishReason;
  if (!finish.isEmpty() && finish != ReplyMetrics::kInterrupted) return false;  // it ended
  if (messages.last().content.isEmpty() && messages.last().toolCalls.isEmpty()) return dropEmptyReply(messages);
  if (finish == ReplyMetrics::kInterrupted) return false;
  finish = ReplyMetrics::kInterrupted;
  return true;
}

// Where a chat's replies come from when not this machine's engine: a remote OpenAI-compatible
// server (remote/openai_client.h) and its model. Saved with the chat; the server's API key is
// not (appcore/remote/remote_endpoints.h keeps keys in a file of the user's own, mode 0600).
struct RemoteEngineChoice {
  QString url{};    // the endpoint's base URL; empty: the local engine
  QString model{};  // the model id the server lists
  bool isSet() const { return !url.isEmpty(); }
  bool operator==(const RemoteEngineChoice&) const = default;
};

// The user's tools a chat may call (its MCP servers' tools: appcore/tools/mcp_servers.h), and
// how many calls one of its turns may make before it stops and says so.
struct ChatTools {
  QStringList servers{};  // by name, as mcp.json names them; empty: the chat calls no tools
  int maxCallsPerTurn = kDefaultMaxCalls;
  static constexpr int kDefaultMaxCalls = 8;
  bool isDefault() const { return servers.isEmpty() && maxCallsPerTurn == kDefaultMaxCalls; }
  bool operator==(const ChatTools&) const = default;
};

struct ChatRecord {
  ChatId id = -1;
  QString title;
  ChatId parentId = -1;      // the chat this one was forked from; -1: none
  int forkedAtMessage = -1;  // 1-based: the parent's messages 1..k were copied
  bool overridesSystemPrompt = false;
  QString systemPrompt;      // used when overridesSystemPrompt
  QVector<MessageRecord> messages;
  // The chat outgrew the context and its oldest turns were dropped: messages before this one
  // are shown greyed, outside the model's view, and no longer sent.
  int firstInView = 0;
  ContextPolicy contextPolicy = ContextPolicy::appDefault;  // saved as its number
  bool pinned = false;   // listed first
  qint64 lastActive = 0;  // ms since the epoch: its last turn began (or it was made); the list's "recent"
  // How its replies sample when not the app's defaults (only the fields takeSampling copies count).
  std::optional<TurnSettings> ownSampling;
  RemoteEngineChoice remote;  // unset: the chat runs on this machine's engine
  ChatTools tools;             // its MCP servers: none unless the user turned some on
  // The last turn failed: said at the end of the chat (saved: it is there after a restart),
  // until its next turn starts.
  PlainError lastError;

  // The messages the engine reads: the effective system prompt (none when empty: the
  // template's default applies), then the chat from the first message in view. Earlier replies
  // go without their <think> part (reply_thinking.h); the last message stays whole, as a reply
  // being continued must. An earlier reply that called tools keeps its thinking apart
  // (EngineMessage::reasoning): gpt-oss's template shows it to the model until the turn answers.
  ChatMessages engineMessages(const QString& sharedSystemPrompt) const {
    ChatMessages out;
    const QString system = overridesSystemPrompt ? systemPrompt : sharedSystemPrompt;
    if (!system.trimmed().isEmpty()) out.append({QStringLiteral("system"), system});
    for (int i = std::clamp(firstInView, 0, static_cast<int>(messages.size())); i < messages.size(); ++i) {
      const bool earlierReply = messages[i].role == QLatin1String("assistant") && i + 1 < messages.size();
      const MessageRecord& m = messages[i];
      if (!earlierReply) {
        out.append({m.role, m.content, m.toolCalls, m.toolCallId, m.toolName});
        continue;
      }
      const ReplyThinking parts = splitThinking(m.content);
      out.append({m.role, parts.present ? parts.answer : m.content, m.toolCalls, m.toolCallId, m.toolName,
                  m.toolCalls.isEmpty() ? QString() : parts.thinking});
    }
    return out;
  }
};
