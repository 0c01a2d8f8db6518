// Messages and their versions to and from JSON (see chat_json.h for the shape).
#include "ui/chat/chat_json.h"

#include <algorithm>

namespace {
bool isChatRole(const QString& role) { return role == QLatin1String("user") || role == QLatin1String("assistant"); }
}  // namespace

QJsonObject messageToJson(const MessageRecord& m) {
  return QJsonObject{{QStringLiteral("role"), m.role},
                     {QStringLiteral("content"), m.content},
                     {QStringLiteral("tokens"), m.metrics.numTokens},
                     {QStringLiteral("first_token_ms"), m.metrics.secondsToFirstToken * 1000.0},
                     {QStringLiteral("tokens_per_second"), m.metrics.tokensPerSecond},
                     {QStringLiteral("finish"), m.metrics.finishReason},
                     {QStringLiteral("versions"), tailsToJson(m.otherVersions)},
                     {QStringLiteral("version"), m.versionIndex}};
}

MessageRecord messageFromJson(const QJsonObject& o) {
  MessageRecord m;
  m.role = o.value(QStringLiteral("role")).toString();
  m.content = o.value(QStringLiteral("content")).toString();
  m.metrics.numTokens = std::max(o.value(QStringLiteral("tokens")).toInt(), 0);
  m.metrics.secondsToFirstToken = std::max(o.value(QStringLiteral("first_token_ms")).toDouble(), 0.0) / 1000.0;
  m.metrics.tokensPerSecond = std::max(o.value(QStringLiteral("tokens_per_second")).toDouble(), 0.0);
  m.metrics.finishReason = o.value(QStringLiteral("finish")).toString();
  m.otherVersions = tailsFromJson(o.value(QStringLiteral("versions")).toArray());
  m.versionIndex = std::clamp(o.value(QStringLiteral("version")).toInt(), 0, static_cast<int>(m.otherVersions.size()));
  return m;
}

QJsonArray tailsToJson(const QVector<QVector<MessageRecord>>& tails) {
  QJsonArray out;
  for (const auto& tail : tails) {
    QJsonArray t;
    for (const MessageRecord& m : tail) t.append(messageToJson(m));
    out.append(t);
  }
  return out;
}

QVector<QVector<MessageRecord>> tailsFromJson(const QJsonArray& tails) {
  QVector<QVector<MessageRecord>> out;
  for (const QJsonValue& t : tails) {
    QVector<MessageRecord> tail;
    for (const QJsonValue& v : t.toArray()) {
      MessageRecord m = messageFromJson(v.toObject());
      if (isChatRole(m.role)) tail.append(std::move(m));
    }
    if (!tail.isEmpty()) out.append(tail);
  }
  return out;
}
