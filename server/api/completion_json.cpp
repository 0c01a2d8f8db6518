// OpenAI response bodies.
#include "server/api/completion_json.h"

#include <QJsonArray>
#include <QJsonDocument>

namespace {

QByteArray compact(const QJsonObject& o) { return QJsonDocument(o).toJson(QJsonDocument::Compact); }

QJsonValue orNull(const QString& s) { return s.isEmpty() ? QJsonValue(QJsonValue::Null) : QJsonValue(s); }

QJsonObject headJson(const ResponseHead& head, bool chunk) {
  QString object = head.chat ? (chunk ? QStringLiteral("chat.completion.chunk") : QStringLiteral("chat.completion"))
                             : QStringLiteral("text_completion");
  return {{"id", head.id},
          {"object", object},
          {"created", static_cast<qint64>(head.created)},
          {"model", head.model},
          {"system_fingerprint", QStringLiteral("pagedchat")}};
}

QJsonArray toolCallsJson(const std::vector<pagedchat::ToolCall>& calls, int firstIndex, bool numbered) {
  QJsonArray out;
  for (size_t i = 0; i < calls.size(); ++i) {
    QJsonObject call{{"id", QString::fromStdString(calls[i].id)},
                     {"type", "function"},
                     {"function", QJsonObject{{"name", QString::fromStdString(calls[i].name)},
                                              {"arguments", QString::fromStdString(calls[i].arguments)}}}};
    if (numbered) call["index"] = firstIndex + static_cast<int>(i);
    out.append(call);
  }
  return out;
}

}  // namespace

QJsonObject usageJson(const Usage& u) {
  return {{"prompt_tokens", static_cast<qint64>(u.promptTokens)},
          {"completion_tokens", static_cast<qint64>(u.completionTokens)},
          {"total_tokens", static_cast<qint64>(u.promptTokens + u.completionTokens)},
          {"prompt_tokens_details", QJsonObject{{"cached_tokens", static_cast<qint64>(u.cachedTokens)}}}};
}

QByteArray completionJson(const ResponseHead& head, const std::vector<ChoiceResult>& choices, const Usage& usage) {
  QJsonObject o = headJson(head, false);
  QJsonArray array;
  for (size_t i = 0; i < choices.size(); ++i) {
    QJsonObject c{{"index", static_cast<int>(i)}, {"finish_reason", orNull(choices[i].finishReason)}, {"logprobs", choices[i].logprobs}};
    if (head.chat) {
      QJsonObject message{{"role", "assistant"}, {"content", choices[i].text}, {"refusal", QJsonValue::Null}};
      if (!choices[i].reasoning.isEmpty()) message["reasoning_content"] = choices[i].reasoning;
      if (!choices[i].toolCalls.empty()) {
        if (choices[i].text.isEmpty()) message["content"] = QJsonValue::Null;
        message["tool_calls"] = toolCallsJson(choices[i].toolCalls, 0, false);
      }
      c["message"] = message;
    }
    else c["text"] = choices[i].text;
    array.append(c);
  }
  o["choices"] = array;
  o["usage"] = usageJson(usage);
  return compact(o);
}

QByteArray chunkJson(const ResponseHead& head, int index, const QString& text, bool withRole, const QString& finishReason,
                     const QJsonValue& logprobs) {
  QJsonObject o = headJson(head, true);
  QJsonObject c{{"index", index}, {"finish_reason", orNull(finishReason)}, {"logprobs", logprobs}};
  if (head.chat) {
    QJsonObject delta;
    if (withRole) delta["role"] = QStringLiteral("assistant");
    if (!text.isEmpty() || withRole) delta["content"] = text;
    c["delta"] = delta;
  } else {
    c["text"] = text;
  }
  o["choices"] = QJsonArray{c};
  // With include_usage, OpenAI sends "usage": null on every chunk but the last.
  o["usage"] = QJsonValue::Null;
  return compact(o);
}

QByteArray reasoningChunkJson(const ResponseHead& head, int index, const QString& reasoning) {
  QJsonObject o = headJson(head, true);
  o["choices"] = QJsonArray{QJsonObject{{"index", index}, {"finish_reason", QJsonValue::Null}, {"logprobs", QJsonValue::Null},
                                        {"delta", QJsonObject{{"reasoning_content", reasoning}}}}};
  o["usage"] = QJsonValue::Null;
  return compact(o);
}

QByteArray toolCallsChunkJson(const ResponseHead& head, int index, const std::vector<pagedchat::ToolCall>& calls, int firstIndex) {
  QJsonObject o = headJson(head, true);
  o["choices"] = QJsonArray{QJsonObject{{"index", index}, {"finish_reason", QJsonValue::Null}, {"logprobs", QJsonValue::Null},
                                        {"delta", QJsonObject{{"tool_calls", toolCallsJson(calls, firstIndex, true)}}}}};
  o["usage"] = QJsonValue::Null;
  return compact(o);
}

QByteArray usageChunkJson(const ResponseHead& head, const Usage& usage) {
  QJsonObject o = headJson(head, true);
  o["choices"] = QJsonArray{};
  o["usage"] = usageJson(usage);
  return compact(o);
}

namespace {

QJsonArray bytesJson(const QByteArray& piece) {
  QJsonArray bytes;
  for (char ch : piece) bytes.append(static_cast<int>(static_cast<unsigned char>(ch)));
  return bytes;
}

}  // namespace

QJsonValue tokenLogprobsJson(bool chat, const std::vector<TokenLogprob>& tokens, int firstOffset) {
  if (chat) {
    QJsonArray content;
    for (const TokenLogprob& t : tokens) {
      QJsonArray top;
      for (const auto& [piece, lp] : t.top)
        top.append(QJsonObject{{"token", QString::fromUtf8(piece)}, {"logprob", lp}, {"bytes", bytesJson(piece)}});
      content.append(QJsonObject{{"token", QString::fromUtf8(t.piece)}, {"logprob", t.logprob}, {"bytes", bytesJson(t.piece)}, {"top_logprobs", top}});
    }
    return QJsonObject{{"content", content}, {"refusal", QJsonValue::Null}};
  }
  QJsonArray pieces, logprobs, tops, offsets;
  int offset = firstOffset;
  for (const TokenLogprob& t : tokens) {
    const QString piece = QString::fromUtf8(t.piece);
    pieces.append(piece);
    logprobs.append(t.logprob);
    QJsonObject top;
    for (const auto& [p, lp] : t.top) top.insert(QString::fromUtf8(p), lp);
    tops.append(top);
    offsets.append(offset);
    offset += static_cast<int>(piece.size());
  }
  return QJsonObject{{"tokens", pieces}, {"token_logprobs", logprobs}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

QByteArray modelsJson(const QString& modelId, int64_t created) {
  QJsonObject model{{"id", modelId}, {"object", "model"}, {"created", static_cast<qint64>(created)}, {"owned_by", "pagedchat"}};
  return compact(QJsonObject{{"object", "list"}, {"data", QJsonArray{model}}});
}
