// SQLite persistence of the chats: schema, load, and each save as one transaction.
#include "ui/chat/chat_database.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QFileInfo>
#include <QSqlError>
#include <QSqlQuery>
#include <QStandardPaths>
#include <QUuid>

#include <algorithm>
#include <QVariant>

namespace {
constexpr int kSchemaVersion = 1;
// Qt binds a null QString as SQL NULL; the text columns are NOT NULL and an empty text is "".
QString text(const QString& s) { return s.isNull() ? QStringLiteral("") : s; }
}  // namespace

QString ChatDatabase::defaultPath() {
  return QDir(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation)).filePath(QStringLiteral("chats.sqlite"));
}

namespace {

// A message's other versions as JSON: an array of tails, each an array of messages, each
// message with its own versions (a tree, as deep as the edits went).
QJsonArray tailsJson(const QVector<QVector<MessageRecord>>& tails) {
  QJsonArray out;
  for (const auto& tail : tails) {
    QJsonArray t;
    for (const MessageRecord& m : tail)
      t.append(QJsonObject{{QStringLiteral("role"), m.role},
                           {QStringLiteral("content"), m.content},
                           {QStringLiteral("tokens"), m.metrics.numTokens},
                           {QStringLiteral("first_token_ms"), m.metrics.secondsToFirstToken * 1000.0},
                           {QStringLiteral("tokens_per_second"), m.metrics.tokensPerSecond},
                           {QStringLiteral("finish"), m.metrics.finishReason},
                           {QStringLiteral("versions"), tailsJson(m.otherVersions)},
                           {QStringLiteral("version"), m.versionIndex}});
    out.append(t);
  }
  return out;
}

QVector<QVector<MessageRecord>> tailsFrom(const QJsonArray& tails) {
  QVector<QVector<MessageRecord>> out;
  for (const QJsonValue& t : tails) {
    QVector<MessageRecord> tail;
    for (const QJsonValue& v : t.toArray()) {
      const QJsonObject o = v.toObject();
      MessageRecord m;
      m.role = o.value(QStringLiteral("role")).toString();
      m.content = o.value(QStringLiteral("content")).toString();
      m.metrics.numTokens = o.value(QStringLiteral("tokens")).toInt();
      m.metrics.secondsToFirstToken = o.value(QStringLiteral("first_token_ms")).toDouble() / 1000.0;
      m.metrics.tokensPerSecond = o.value(QStringLiteral("tokens_per_second")).toDouble();
      m.metrics.finishReason = o.value(QStringLiteral("finish")).toString();
      m.otherVersions = tailsFrom(o.value(QStringLiteral("versions")).toArray());
      m.versionIndex = std::clamp(o.value(QStringLiteral("version")).toInt(), 0, static_cast<int>(m.otherVersions.size()));
      if (m.role == QLatin1String("user") || m.role == QLatin1String("assistant")) tail.append(m);
    }
    if (!tail.isEmpty()) out.append(tail);
  }
  return out;
}

}  // namespace

QString ChatDatabase::versionsToJson(const QVector<QVector<MessageRecord>>& versions) {
  return versions.isEmpty() ? QString(QLatin1String("")) : QString::fromUtf8(QJsonDocument(tailsJson(versions)).toJson(QJsonDocument::Compact));
}

QVector<QVector<MessageRecord>> ChatDatabase::versionsFromJson(const QString& json) {
  return json.isEmpty() ? QVector<QVector<MessageRecord>>{} : tailsFrom(QJsonDocument::fromJson(json.toUtf8()).array());
}

ChatDatabase::ChatDatabase(const QString& path)
    : m_connection(QStringLiteral("chats-") + QUuid::createUuid().toString(QUuid::WithoutBraces)) {
  QDir().mkpath(QFileInfo(path).absolutePath());
  m_db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), m_connection);
  m_db.setDatabaseName(path);
  if (!m_db.open()) {
    fail(QStringLiteral("open %1").arg(path), m_db.lastError().text());
    return;
  }
  m_open = exec(QStringLiteral("PRAGMA foreign_keys = ON")) &&
           exec(QStringLiteral("CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)")) &&
           exec(QStringLiteral("CREATE TABLE IF NOT EXISTS chats (id INTEGER PRIMARY KEY, title TEXT NOT NULL, "
                               "parent_id INTEGER NOT NULL, forked_at INTEGER NOT NULL, "
                               "overrides_system INTEGER NOT NULL, system_prompt TEXT NOT NULL)")) &&
           exec(QStringLiteral("CREATE TABLE IF NOT EXISTS messages (chat_id INTEGER NOT NULL REFERENCES chats(id) "
                               "ON DELETE CASCADE, position INTEGER NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL, "
                               "num_tokens INTEGER NOT NULL, first_token_ms REAL NOT NULL, tokens_per_second REAL NOT NULL, "
                               "finish_reason TEXT NOT NULL, PRIMARY KEY (chat_id, position))"));
  // Columns added since the first schema (older databases get them with their defaults).
  if (m_open) m_open = addColumn(QStringLiteral("chats"), QStringLiteral("first_in_view INTEGER NOT NULL DEFAULT 0")) &&
                       addColumn(QStringLiteral("chats"), QStringLiteral("context_policy INTEGER NOT NULL DEFAULT -1")) &&
                       addColumn(QStringLiteral("messages"), QStringLiteral("versions TEXT NOT NULL DEFAULT ''")) &&
                       addColumn(QStringLiteral("messages"), QStringLiteral("version_index INTEGER NOT NULL DEFAULT 0"));
  if (m_open && setting(QStringLiteral("schema_version")).isEmpty())
    setSetting(QStringLiteral("schema_version"), QString::number(kSchemaVersion));
}

ChatDatabase::~ChatDatabase() {
  m_db.close();
  m_db = QSqlDatabase();
  QSqlDatabase::removeDatabase(m_connection);
}

bool ChatDatabase::fail(const QString& what, const QString& error) {
  m_lastError = QStringLiteral("%1: %2").arg(what, error);
  qWarning("chat database: %s", qPrintable(m_lastError));
  return false;
}

bool ChatDatabase::addColumn(const QString& table, const QString& definition) {
  QSqlQuery q(m_db);
  if (!q.exec(QStringLiteral("PRAGMA table_info(%1)").arg(table))) return fail(table, q.lastError().text());
  const QString name = definition.section(QLatin1Char(' '), 0, 0);
  while (q.next())
    if (q.value(1).toString() == name) return true;
  return exec(QStringLiteral("ALTER TABLE %1 ADD COLUMN %2").arg(table, definition));
}

bool ChatDatabase::exec(const QString& sql) {
  QSqlQuery q(m_db);
  return q.exec(sql) || fail(sql, q.lastError().text());
}

QVector<ChatRecord> ChatDatabase::loadChats() {
  QVector<ChatRecord> chats;
  if (!m_open) return chats;
  QSqlQuery q(m_db);
  if (!q.exec(QStringLiteral("SELECT id, title, parent_id, forked_at, overrides_system, system_prompt, first_in_view, "
                             "context_policy FROM chats ORDER BY id"))) {
    fail(QStringLiteral("load chats"), q.lastError().text());
    return chats;
  }
  while (q.next()) {
    ChatRecord c;
    c.id = q.value(0).toLongLong();
    c.title = q.value(1).toString();
    c.parentId = q.value(2).toLongLong();
    c.forkedAtMessage = q.value(3).toInt();
    c.overridesSystemPrompt = q.value(4).toBool();
    c.systemPrompt = q.value(5).toString();
    c.firstInView = q.value(6).toInt();
    const int policy = q.value(7).toInt();
    c.contextPolicy = policy == 0 || policy == 1 ? static_cast<ContextPolicy>(policy) : ContextPolicy::appDefault;
    chats.append(c);
  }
  QSqlQuery m(m_db);
  m.prepare(QStringLiteral("SELECT role, content, num_tokens, first_token_ms, tokens_per_second, finish_reason, versions, "
                           "version_index FROM messages WHERE chat_id = ? ORDER BY position"));
  for (ChatRecord& c : chats) {
    m.addBindValue(c.id);
    if (!m.exec()) {
      fail(QStringLiteral("load messages"), m.lastError().text());
      continue;
    }
    while (m.next()) {
      MessageRecord r;
      r.role = m.value(0).toString();
      r.content = m.value(1).toString();
      r.metrics.numTokens = m.value(2).toInt();
      r.metrics.secondsToFirstToken = m.value(3).toDouble() / 1000.0;
      r.metrics.tokensPerSecond = m.value(4).toDouble();
      r.metrics.finishReason = m.value(5).toString();
      r.otherVersions = versionsFromJson(m.value(6).toString());
      r.versionIndex = std::clamp(m.value(7).toInt(), 0, static_cast<int>(r.otherVersions.size()));
      c.messages.append(r);
    }
  }
  return chats;
}

bool ChatDatabase::saveChat(const ChatRecord& chat) {
  if (!m_open) return false;
  if (!m_db.transaction()) return fail(QStringLiteral("begin"), m_db.lastError().text());
  auto rollback = [this](const QString& what, const QSqlQuery& q) {
    m_db.rollback();
    return fail(what, q.lastError().text());
  };
  QSqlQuery q(m_db);
  q.prepare(QStringLiteral("INSERT OR REPLACE INTO chats (id, title, parent_id, forked_at, overrides_system, system_prompt, "
                           "first_in_view, context_policy) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"));
  q.addBindValue(chat.id);
  q.addBindValue(text(chat.title));
  q.addBindValue(chat.parentId);
  q.addBindValue(chat.forkedAtMessage);
  q.addBindValue(chat.overridesSystemPrompt ? 1 : 0);
  q.addBindValue(text(chat.systemPrompt));
  q.addBindValue(chat.firstInView);
  q.addBindValue(static_cast<int>(chat.contextPolicy));
  if (!q.exec()) return rollback(QStringLiteral("save chat %1").arg(chat.id), q);
  QSqlQuery del(m_db);
  del.prepare(QStringLiteral("DELETE FROM messages WHERE chat_id = ?"));
  del.addBindValue(chat.id);
  if (!del.exec()) return rollback(QStringLiteral("save chat %1").arg(chat.id), del);
  QSqlQuery ins(m_db);
  ins.prepare(QStringLiteral("INSERT INTO messages (chat_id, position, role, content, num_tokens, first_token_ms, "
                             "tokens_per_second, finish_reason, versions, version_index) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  for (int i = 0; i < chat.messages.size(); ++i) {
    const MessageRecord& m = chat.messages[i];
    ins.addBindValue(chat.id);
    ins.addBindValue(i);
    ins.addBindValue(text(m.role));
    ins.addBindValue(text(m.content));
    ins.addBindValue(m.metrics.numTokens);
    ins.addBindValue(m.metrics.secondsToFirstToken * 1000.0);
    ins.addBindValue(m.metrics.tokensPerSecond);
    ins.addBindValue(text(m.metrics.finishReason));
    ins.addBindValue(versionsToJson(m.otherVersions));
    ins.addBindValue(m.versionIndex);
    if (!ins.exec()) return rollback(QStringLiteral("save message %1 of chat %2").arg(i).arg(chat.id), ins);
  }
  return m_db.commit() || fail(QStringLiteral("commit"), m_db.lastError().text());
}

bool ChatDatabase::removeChat(ChatId id) {
  if (!m_open) return false;
  QSqlQuery q(m_db);
  q.prepare(QStringLiteral("DELETE FROM chats WHERE id = ?"));
  q.addBindValue(id);
  return q.exec() || fail(QStringLiteral("remove chat %1").arg(id), q.lastError().text());
}

QString ChatDatabase::setting(const QString& key, const QString& fallback) {
  if (!m_open) return fallback;
  QSqlQuery q(m_db);
  q.prepare(QStringLiteral("SELECT value FROM settings WHERE key = ?"));
  q.addBindValue(key);
  return q.exec() && q.next() ? q.value(0).toString() : fallback;
}

bool ChatDatabase::setSetting(const QString& key, const QString& value) {
  if (!m_open) return false;
  QSqlQuery q(m_db);
  q.prepare(QStringLiteral("INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)"));
  q.addBindValue(key);
  q.addBindValue(text(value));
  return q.exec() || fail(QStringLiteral("save setting %1").arg(key), q.lastError().text());
}
