#pragma once
// The names the app's layers share for a chat: its id (given by the UI, stable across
// restarts, the bridge's key), its messages as the engine reads them, and how a turn samples.

#include <QPair>
#include <QString>
#include <QVector>

#include <vector>

#include "engine/chat/chat_template.h"
#include "engine/sample/sampling_params.h"

using ChatId = qint64;

// A call a reply made to one of the user's tools (an MCP server's: appcore/tools/), as the
// model wrote it; its answer is the "tool" message with its id.
struct ToolCallRecord {
  QString id{};         // the call's id, which its tool message answers
  QString name{};       // the function, as the model named it
  QString arguments{};  // a JSON object's text
  bool operator==(const ToolCallRecord&) const = default;
};

// A message as the engine reads it: {role, content} for most ("system", "user", "assistant"),
// with a reply's tool calls, or, for a "tool" message, the call it answers and its function; and
// a reply's thinking apart, where the template may read it back (ChatRecord::engineMessages).
struct EngineMessage {
  QString role{};
  QString content{};
  QVector<ToolCallRecord> toolCalls{};
  QString toolCallId{};
  QString toolName{};
  QString reasoning{};
  bool operator==(const EngineMessage&) const = default;
};
using ChatMessages = QVector<EngineMessage>;

// What a turn does when the chat no longer fits in the context with room for a reply. Saved
// in the database as these numbers: never renumber.
enum class ContextPolicy : int {
  appDefault = -1,  // a chat's setting: the app's
  dropOldest = 0,   // drop the oldest turns (the system prompt stays) until it fits
  stopAndAsk = 1,   // say so in the chat and offer: drop oldest turns / new chat from recent / cancel
};

struct TurnSettings {
  double temperature = 0.7;
  double topP = 0.95;              // 1: off
  int topK = 40;                   // 0: off
  double minP = 0.05;              // 0: off
  double repetitionPenalty = 1.0;  // 1: off
  double frequencyPenalty = 0.0;   // 0: off; subtracted per occurrence in the recent tokens
  double presencePenalty = 0.0;    // 0: off; subtracted once for a token that occurred
  int maxTokens = 512;
  int numSamples = 1;  // compare: 2-4 samples from one prefill (Request::n)
  ContextPolicy contextPolicy = ContextPolicy::dropOldest;  // resolved: never appDefault here
  bool continuesReply = false;  // the turn continues the chat's last reply (cut by its length)
  quint64 seed = 0;    // 0: a fresh random seed each turn
  // How replies are written: "" free text, "json" any JSON object, else a JSON schema's text
  // (appcore/chat/answer_format.h), enforced token by token.
  QString answerFormat = {};
  // The user's tools the turn offers, an OpenAI `tools` array's text ("": none; the controller
  // fills it from the chat's servers, appcore/tools/mcp_servers.h), and the call its reply
  // must make ("": the model chooses; a function's name: that one, the "use tool" action).
  // Per turn: never saved, not a sampling setting.
  QString toolsJson = {};
  QString toolChoice = {};
  // Compare by beam search: numSamples beams (Request::beam_width), shown best first when the
  // search ends; the sampling settings but maxTokens are not used.
  bool beamSearch = false;
  // Compare with different settings: one entry per column (their numSamples and columns are
  // ignored); empty: numSamples samples of these settings.
  std::vector<TurnSettings> columns;
};

// The settings a chat may hold as its own (ChatRecord::ownSampling): how its replies sample.
// Copies them from `from` into `into`, leaving the turn's shape (samples, columns, policy) alone.
inline void takeSampling(TurnSettings& into, const TurnSettings& from) {
  into.temperature = from.temperature;
  into.topP = from.topP;
  into.topK = from.topK;
  into.minP = from.minP;
  into.repetitionPenalty = from.repetitionPenalty;
  into.frequencyPenalty = from.frequencyPenalty;
  into.presencePenalty = from.presencePenalty;
  into.maxTokens = from.maxTokens;
  into.seed = from.seed;
  into.answerFormat = from.answerFormat;
}

inline bool sameSampling(const TurnSettings& a, const TurnSettings& b) {
  return a.temperature == b.temperature && a.topP == b.topP && a.topK == b.topK && a.minP == b.minP &&
         a.repetitionPenalty == b.repetitionPenalty && a.frequencyPenalty == b.frequencyPenalty &&
         a.presencePenalty == b.presencePenalty && a.maxTokens == b.maxTokens && a.seed == b.seed &&
         a.answerFormat == b.answerFormat;
}

inline std::vector<pagedchat::ChatMessage> toEngineMessages(const ChatMessages& messages) {
  std::vector<pagedchat::ChatMessage> chat;
  for (const EngineMessage& m : messages) {
    pagedchat::ChatMessage c{m.role.toStdString(), m.content.toStdString()};
    for (const ToolCallRecord& call : m.toolCalls)
      c.tool_calls.push_back({call.id.toStdString(), call.name.toStdString(), call.arguments.toStdString()});
    c.tool_call_id = m.toolCallId.toStdString();
    c.name = m.toolName.toStdString();
    c.reasoning = m.reasoning.toStdString();
    chat.push_back(std::move(c));
  }
  return chat;
}

// How the engine samples a turn of these settings; `drawnSeed` is used when settings.seed is 0.
inline pagedchat::SamplingParams toSamplingParams(const TurnSettings& settings, uint64_t drawnSeed) {
  pagedchat::SamplingParams p;
  p.temperature = static_cast<float>(settings.temperature);
  p.top_p = static_cast<float>(settings.topP);
  p.top_k = settings.topK;
  p.min_p = static_cast<float>(settings.minP);
  p.repetition_penalty = static_cast<float>(settings.repetitionPenalty);
  p.frequency_penalty = static_cast<float>(settings.frequencyPenalty);
  p.presence_penalty = static_cast<float>(settings.presencePenalty);
  p.max_tokens = settings.maxTokens;
  p.seed = settings.seed != 0 ? settings.seed : drawnSeed;
  return p;
}
