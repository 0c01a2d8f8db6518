#pragma once
// The JSON bodies of OpenAI's completion responses: whole (chat.completion, text_completion)
// and streamed (chat.completion.chunk, text_completion chunks), with usage. One place knows
// the field names, so the streamed and the whole replies cannot drift apart.

#include <QByteArray>
#include <QJsonObject>
#include <QJsonValue>
#include <QString>

#include <cstdint>
#include <utility>
#include <vector>

#include "engine/chat/chat_message.h"

struct Usage {
  int64_t promptTokens = 0;
  int64_t completionTokens = 0;
  int64_t cachedTokens = 0;  // prompt tokens served from the prefix cache
};

struct ChoiceResult {
  QString text;
  QString finishReason;  // "stop", "length" or "tool_calls"
  QJsonValue logprobs;   // null unless asked for (see tokenLogprobsJson)
  QString reasoning = {};  // chat: a thinking model's thinking (message.reasoning_content)
  std::vector<pagedchat::ToolCall> toolCalls = {};  // chat: the calls the reply made (content null when it said nothing else)
};

// One generated token's log-probabilities: the token as raw bytes (a piece may hold part of a
// UTF-8 character) with its logprob, and the most likely alternatives.
struct TokenLogprob {
  QByteArray piece;
  float logprob = 0.0f;
  std::vector<std::pair<QByteArray, float>> top;
};
// The "logprobs" value of a choice (or of one chunk) holding these tokens: chat's
// {"content": [...]}, or the legacy completion's {"tokens", "token_logprobs", "top_logprobs",
// "text_offset"} (offsets: where each token's text starts in the choice's text, from firstOffset).
QJsonValue tokenLogprobsJson(bool chat, const std::vector<TokenLogprob>& tokens, int firstOffset);

// Identifies a response: its id ("chatcmpl-..." / "cmpl-..."), creation time, model id, and
// whether it is a chat (else a text completion).
struct ResponseHead {
  QString id;
  int64_t created = 0;
  QString model;
  bool chat = true;
};

QJsonObject usageJson(const Usage& usage);
QByteArray completionJson(const ResponseHead& head, const std::vector<ChoiceResult>& choices, const Usage& usage);
// One streamed chunk for choice `index`: text (chat: role first when `withRole`), and
// finishReason when the choice ends (empty: null).
QByteArray chunkJson(const ResponseHead& head, int index, const QString& text, bool withRole, const QString& finishReason,
                     const QJsonValue& logprobs = QJsonValue::Null);
// A streamed chunk of a thinking model's thinking (delta.reasoning_content).
QByteArray reasoningChunkJson(const ResponseHead& head, int index, const QString& reasoning);
// A streamed chunk for choice `index` with its calls (delta.tool_calls, numbered from firstIndex).
QByteArray toolCallsChunkJson(const ResponseHead& head, int index, const std::vector<pagedchat::ToolCall>& calls, int firstIndex);
// The last chunk of stream_options.include_usage: no choices, the usage.
QByteArray usageChunkJson(const ResponseHead& head, const Usage& usage);
QByteArray modelsJson(const QString& modelId, int64_t created);
