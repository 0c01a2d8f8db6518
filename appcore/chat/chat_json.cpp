// Messages and their versions to and from JSON (see chat_json.h for the shape).
#include "appcore/chat/chat_json.h"

#include <QCoreApplication>

#include <algorithm>

namespace {
bool isChatRole(const QString& role) {
  return role == QLatin1String("user") || role == QLatin1String("assistant") || role == QLatin1String("tool");
}
constexpr int kMaxToolCalls = 64;  // of one reply, read back from a file
}  // namespace

QJsonObject chatToolsToJson(const ChatTools& t) {
  return {{QStringLiteral("servers"), QJsonArray::fromStringList(t.servers)}, {QStringLiteral("max_calls"), t.maxCallsPerTurn}};
}

ChatTools chatToolsFromJson(const QJsonObject& o) {
  ChatTools t;
  for (const QJsonValue& v : o.value(QStringLiteral("servers")).toArray())
    if (v.isString() && !v.toString().isEmpty() && !t.servers.contains(v.toString())) t.servers.append(v.toString());
  const QJsonValue max = o.value(QStringLiteral("max_calls"));
  if (max.isDouble() && max.toDouble() >= 1 && max.toDouble() <= 100) t.maxCallsPerTurn = max.toInt();
  return t;
}

QJsonObject samplingToJson(const TurnSettings& s) {
  QJsonObject o{{QStringLiteral("temperature"), s.temperature},
                     {QStringLiteral("top_p"), s.topP},
                     {QStringLiteral("top_k"), s.topK},
                     {QStringLiteral("min_p"), s.minP},
                     {QStringLiteral("repetition_penalty"), s.repetitionPenalty},
                     {QStringLiteral("frequency_penalty"), s.frequencyPenalty},
                     {QStringLiteral("presence_penalty"), s.presencePenalty},
                     {QStringLiteral("max_tokens"), s.maxTokens},
                     {QStringLiteral("seed"), QString::number(s.seed)}};
  if (!s.answerFormat.isEmpty()) o[QStringLiteral("answer_format")] = s.answerFormat;
  return o;
}

std::optional<TurnSettings> samplingFromJson(const QJsonObject& o, QString* error) {
  TurnSettings s;
  QString bad;
  auto number = [&](const char* key, auto& into, double lo, double hi) {
    const QJsonValue v = o.value(QLatin1String(key));
    if (v.isUndefined() || !bad.isEmpty()) return;
    if (!v.isDouble() || v.toDouble() < lo || v.toDouble() > hi) {
      bad = QCoreApplication::translate("ChatJson", "the sampling setting \"%1\" must be a number from %2 to %3")
                .arg(QLatin1String(key)).arg(lo).arg(hi);
      return;
    }
    into = static_cast<std::remove_reference_t<decltype(into)>>(v.toDouble());
  };
  // The ranges the settings dialogs allow.
  number("temperature", s.temperature, 0, 5);
  number("top_p", s.topP, 0, 1);
  number("top_k", s.topK, 0, 100000);
  number("min_p", s.minP, 0, 1);
  number("repetition_penalty", s.repetitionPenalty, 0.1, 5);
  number("frequency_penalty", s.frequencyPenalty, -2, 2);
  number("presence_penalty", s.presencePenalty, -2, 2);
  number("max_tokens", s.maxTokens, 1, 1 << 20);
  const QJsonValue seed = o.value(QStringLiteral("seed"));
  if (bad.isEmpty() && !seed.isUndefined()) {
    bool ok = false;
    s.seed = seed.toString().toULongLong(&ok);
    if (!ok) bad = QCoreApplication::translate("ChatJson", "the sampling setting \"seed\" must be a whole number in a string");
  }
  const QJsonValue format = o.value(QStringLiteral("answer_format"));
  if (bad.isEmpty() && !format.isUndefined()) {
    if (!format.isString()) bad = QCoreApplication::translate("ChatJson", "the sampling setting \"answer_format\" must be a string");
    else s.answerFormat = format.toString();
  }
  if (bad.isEmpty()) return s;
  if (error) *error = bad;
  return std::nullopt;
}

QJsonObject toolFieldsToJson(const MessageRecord& m) {
  QJsonObject o;
  if (!m.toolCalls.isEmpty()) {
    QJsonArray calls;
    for (const ToolCallRecord& c : m.toolCalls)
      calls.append(QJsonObject{{QStringLiteral("id"), c.id}, {QStringLiteral("name"), c.name}, {QStringLiteral("arguments"), c.arguments}});
    o[QStringLiteral("tool_calls")] = calls;
  }
  if (!m.toolCallId.isEmpty()) o[QStringLiteral("tool_call_id")] = m.toolCallId;
  if (!m.toolName.isEmpty()) o[QStringLiteral("name")] = m.toolName;
  return o;
}

void toolFieldsFromJson(const QJsonObject& o, MessageRecord* m) {
  m->toolCalls.clear();
  for (const QJsonValue& v : o.value(QStringLiteral("tool_calls")).toArray()) {
    if (m->toolCalls.size() == kMaxToolCalls) break;
    const QJsonObject c = v.toObject();
    ToolCallRecord call{c.value(QStringLiteral("id")).toString(), c.value(QStringLiteral("name")).toString(),
                        c.value(QStringLiteral("arguments")).toString()};
    if (!call.name.isEmpty()) m->toolCalls.append(call);
  }
  m->toolCallId = o.value(QStringLiteral("tool_call_id")).toString();
  m->toolName = o.value(QStringLiteral("name")).toString();
}

QJsonObject messageToJson(const MessageRecord& m) {
  QJsonObject o = toolFieldsToJson(m);
  const QJsonObject rest{{QStringLiteral("role"), m.role},
                     {QStringLiteral("content"), m.content},
                     {QStringLiteral("tokens"), m.metrics.numTokens},
                     {QStringLiteral("first_token_ms"), m.metrics.secondsToFirstToken * 1000.0},
                     {QStringLiteral("tokens_per_second"), m.metrics.tokensPerSecond},
                     {QStringLiteral("finish"), m.metrics.finishReason},
                     {QStringLiteral("versions"), tailsToJson(m.otherVersions)},
                     {QStringLiteral("version"), m.versionIndex}};
  for (auto it = rest.begin(); it != rest.end(); ++it) o.insert(it.key(), it.value());
  return o;
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
  toolFieldsFromJson(o, &m);
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
