#pragma once
// The JSON bodies of OpenAI's completion responses: whole (chat.completion, text_completion)
// and streamed (chat.completion.chunk, text_completion chunks), with usage. One place knows
// the field names, so the streamed and the whole replies cannot drift apart.

#include <QByteArray>
#include <QJsonObject>
#include <QString>

#include <cstdint>
#include <vector>

struct Usage {
  int64_t promptTokens = 0;
  int64_t completionTokens = 0;
  int64_t cachedTokens = 0;  // prompt tokens served from the prefix cache
};

struct ChoiceResult {
  QString text;
  QString finishReason;  // "stop" or "length"
};

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
QByteArray chunkJson(const ResponseHead& head, int index, const QString& text, bool withRole, const QString& finishReason);
// The last chunk of stream_options.include_usage: no choices, the usage.
QByteArray usageChunkJson(const ResponseHead& head, const Usage& usage);
QByteArray modelsJson(const QString& modelId, int64_t created);
