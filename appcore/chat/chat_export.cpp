// Export and import of one chat: Markdown for reading, JSON for a round trip.
#include "appcore/chat/chat_export.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>

#include "appcore/chat/chat_json.h"
#include "appcore/io/save_file.h"

namespace {
const QString kFormat = QStringLiteral("pagedchat.chat");

QString tr(const char* text) { return QCoreApplication::translate("ChatExport", text); }  // as QObject::tr

QString policyName(ContextPolicy p) {
  switch (p) {
    case ContextPolicy::dropOldest: return QStringLiteral("drop_oldest");
    case ContextPolicy::stopAndAsk: return QStringLiteral("stop_and_ask");
    case ContextPolicy::appDefault: break;
  }
  return QStringLiteral("app_default");
}

std::optional<ContextPolicy> policyFrom(const QString& name) {
  if (name.isEmpty() || name == QLatin1String("app_default")) return ContextPolicy::appDefault;
  if (name == QLatin1String("drop_oldest")) return ContextPolicy::dropOldest;
  if (name == QLatin1String("stop_and_ask")) return ContextPolicy::stopAndAsk;
  return std::nullopt;
}

}  // namespace

QString chatToMarkdown(const ChatRecord& chat, const QString& sharedSystemPrompt) {
  QString md = QStringLiteral("# %1\n\n").arg(chat.title);
  const QString system = chat.overridesSystemPrompt ? chat.systemPrompt : sharedSystemPrompt;
  if (!system.trimmed().isEmpty()) md += QStringLiteral("**System**\n\n%1\n\n").arg(system.trimmed());
  for (int i = 0; i < chat.messages.size(); ++i) {
    const MessageRecord& m = chat.messages[i];
    const bool user = m.role == QLatin1String("user");
    QString header = user ? tr("You") : tr("Assistant");
    if (m.numVersions() > 1) header += QStringLiteral(" (%1 %2 / %3)").arg(tr("version")).arg(m.versionIndex + 1).arg(m.numVersions());
    if (i < chat.firstInView) header += QStringLiteral(" · %1").arg(tr("outside the model's view"));
    md += QStringLiteral("**%1**\n\n%2\n\n").arg(header, m.content.trimmed());
    if (!user && !m.metrics.isEmpty()) md += QStringLiteral("<sub>%1</sub>\n\n").arg(m.metrics.summary());
  }
  return md;
}

QByteArray chatToJson(const ChatRecord& chat, const QString& sharedSystemPrompt, const TurnSettings& sampling) {
  QJsonArray messages;
  for (const MessageRecord& m : chat.messages) messages.append(messageToJson(m));
  const QJsonObject o{
      {QStringLiteral("format"), kFormat},
      {QStringLiteral("version"), kChatExportVersion},
      {QStringLiteral("exported_at"), QDateTime::currentDateTimeUtc().toString(Qt::ISODate)},
      {QStringLiteral("title"), chat.title},
      {QStringLiteral("own_system_prompt"), chat.overridesSystemPrompt},
      // The prompt the chat read: its own, or the app's shared one at the time of the export.
      {QStringLiteral("system_prompt"), chat.overridesSystemPrompt ? chat.systemPrompt : sharedSystemPrompt},
      {QStringLiteral("context_policy"), policyName(chat.contextPolicy)},
      {QStringLiteral("first_in_view"), chat.firstInView},
      // The chat's own settings, or the app's it replied under when it has none.
      {QStringLiteral("own_sampling"), chat.ownSampling.has_value()},
      {QStringLiteral("sampling"), samplingToJson(chat.ownSampling.value_or(sampling))},
      {QStringLiteral("tools"), chatToolsToJson(chat.tools)},  // names of the user's servers only: no command, no key
      {QStringLiteral("messages"), messages}};
  return QJsonDocument(o).toJson(QJsonDocument::Indented);
}

std::optional<ChatRecord> chatFromJson(const QByteArray& json, QString* error) {
  auto failed = [error](const QString& why) {
    if (error) *error = why;
    return std::nullopt;
  };
  if (json.size() > kMaxChatImportBytes) return failed(tr("the file is larger than a chat export can be (64 MiB)"));
  QJsonParseError parse;
  const QJsonDocument doc = QJsonDocument::fromJson(json, &parse);
  if (parse.error != QJsonParseError::NoError)
    return failed(tr("the file is not JSON (%1 at byte %2)").arg(parse.errorString()).arg(parse.offset));
  const QJsonObject o = doc.object();
  if (o.value(QStringLiteral("format")).toString() != kFormat)
    return failed(tr("the file is not a PagedChat chat export (no \"format\": \"pagedchat.chat\")"));
  const int version = o.value(QStringLiteral("version")).toInt(-1);
  if (version < 1 || version > kChatExportVersion)
    return failed(tr("the export is of version %1; this PagedChat reads version %2").arg(version).arg(kChatExportVersion));
  const QJsonValue messages = o.value(QStringLiteral("messages"));
  if (!messages.isArray()) return failed(tr("the export has no \"messages\" array"));

  ChatRecord chat;
  chat.title = o.value(QStringLiteral("title")).toString();
  chat.overridesSystemPrompt = o.value(QStringLiteral("own_system_prompt")).toBool();
  // The prompt is kept as the chat's own only when it was: a chat that read the shared prompt
  // reads this app's.
  if (chat.overridesSystemPrompt) chat.systemPrompt = o.value(QStringLiteral("system_prompt")).toString();
  const std::optional<ContextPolicy> policy = policyFrom(o.value(QStringLiteral("context_policy")).toString());
  if (!policy) return failed(tr("unknown context policy \"%1\"").arg(o.value(QStringLiteral("context_policy")).toString()));
  chat.contextPolicy = *policy;
  if (o.value(QStringLiteral("own_sampling")).toBool()) {
    QString why;
    chat.ownSampling = samplingFromJson(o.value(QStringLiteral("sampling")).toObject(), &why);
    if (!chat.ownSampling) return failed(why);
  }
  chat.tools = chatToolsFromJson(o.value(QStringLiteral("tools")).toObject());
  const QJsonArray list = messages.toArray();
  for (qsizetype i = 0; i < list.size(); ++i) {
    const QJsonObject m = list[i].toObject();
    const QString role = m.value(QStringLiteral("role")).toString();
    if (role != QLatin1String("user") && role != QLatin1String("assistant") && role != QLatin1String("tool"))
      return failed(tr("message %1 has the role \"%2\" (a chat holds \"user\", \"assistant\" and \"tool\" messages)")
                        .arg(i + 1)
                        .arg(role));
    if (!m.value(QStringLiteral("content")).isString()) return failed(tr("message %1 has no text (\"content\")").arg(i + 1));
    chat.messages.append(messageFromJson(m));
  }
  chat.firstInView = std::clamp(o.value(QStringLiteral("first_in_view")).toInt(), 0, static_cast<int>(chat.messages.size()));
  return chat;
}

bool writeChatFile(const QString& path, const ChatRecord& chat, const QString& sharedSystemPrompt, const TurnSettings& sampling,
                   QString* error) {
  const bool markdown = path.endsWith(QStringLiteral(".md"), Qt::CaseInsensitive) ||
                        path.endsWith(QStringLiteral(".markdown"), Qt::CaseInsensitive);
  const QByteArray bytes = markdown ? chatToMarkdown(chat, sharedSystemPrompt).toUtf8() : chatToJson(chat, sharedSystemPrompt, sampling);
  return saveFile(path, bytes, error);  // all of it or, on failure, the file as it was
}

std::optional<ChatRecord> readChatFile(const QString& path, QString* error) {
  QFile file(path);
  QString why;
  std::optional<ChatRecord> record;
  if (!file.open(QIODevice::ReadOnly)) why = file.errorString();
  else if (file.size() > kMaxChatImportBytes) why = tr("the file is larger than a chat export can be (64 MiB)");
  else record = chatFromJson(file.readAll(), &why);
  if (!record && error) *error = why;
  return record;
}
