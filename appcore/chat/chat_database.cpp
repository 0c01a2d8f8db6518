// SQLite persistence of the chats: schema, load, chat ids, and each save as one transaction
// of the rows that changed.
#include "appcore/chat/chat_database.h"

#include "appcore/chat/chat_json.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QFileInfo>
#include <QSqlError>
#include <QSqlQuery>
#include <QStandardPaths>
#include <QRegularExpression>
#include <QUuid>

#include <QVariant>

#include <algorithm>
#include <set>

#include "appcore/chat/chat_json.h"

namespace {
constexpr int kSchemaVersion = 1;
// The settings key of the last chat id given (newChatId): ids are never given twice.
const QString kLastChatIdKey = QStringLiteral("last_chat_id");
// The search index's row of a message: its chat's id times this, plus its position. A message
// at a later position (a chat of a million messages) goes unindexed.
constexpr qint64 kIndexRowsPerChat = qint64{1} << 20;
// Qt binds a null QString as SQL NULL; the text columns are NOT NULL and an empty text is "".
QString text(const QString& s) { return s.isNull() ? QStringLiteral("") : s; }

// Whether two messages save as the same row: what the messages table keeps of them (the
// metrics not saved, such as the prompt's tokens, do not count).
bool sameAsSaved(const MessageRecord& a, const MessageRecord& b);
bool sameTails(const QVector<QVector<MessageRecord>>& a, const QVector<QVector<MessageRecord>>& b) {
  if (a.size() != b.size()) return false;
  if (a.constData() == b.constData()) return true;  // shared, as an unchanged copy is
  for (int i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size()) return false;
    for (int j = 0; j < a[i].size(); ++j)
      if (!sameAsSaved(a[i][j], b[i][j])) return false;
  }
  return true;
}
bool sameAsSaved(const MessageRecord& a, const MessageRecord& b) {
  return a.role == b.role && a.content == b.content && a.metrics.numTokens == b.metrics.numTokens &&
         a.metrics.secondsToFirstToken == b.metrics.secondsToFirstToken &&
         a.metrics.tokensPerSecond == b.metrics.tokensPerSecond && a.metrics.finishReason == b.metrics.finishReason &&
         a.versionIndex == b.versionIndex && sameTails(a.otherVersions, b.otherVersions) && a.toolCalls == b.toolCalls &&
         a.toolCallId == b.toolCallId && a.toolName == b.toolName;
}
bool sameChatRow(const ChatRecord& a, const ChatRecord& b) {
  return a.title == b.title && a.parentId == b.parentId && a.forkedAtMessage == b.forkedAtMessage &&
         a.overridesSystemPrompt == b.overridesSystemPrompt && a.systemPrompt == b.systemPrompt &&
         a.firstInView == b.firstInView && a.contextPolicy == b.contextPolicy && a.pinned == b.pinned &&
         a.lastActive == b.lastActive && a.ownSampling.has_value() == b.ownSampling.has_value() &&
         (!a.ownSampling || sameSampling(*a.ownSampling, *b.ownSampling)) && a.remote == b.remote &&
         a.lastError.sentence == b.lastError.sentence && a.lastError.detail == b.lastError.detail && a.tools == b.tools;
}
}  // namespace

QString ChatDatabase::defaultPath() {
  return QDir(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation)).filePath(QStringLiteral("chats.sqlite"));
}

QString ChatDatabase::versionsToJson(const QVector<QVector<MessageRecord>>& versions) {
  return versions.isEmpty() ? QString(QLatin1String("")) : QString::fromUtf8(QJsonDocument(tailsToJson(versions)).toJson(QJsonDocument::Compact));
}

QVector<QVector<MessageRecord>> ChatDatabase::versionsFromJson(const QString& json) {
  return json.isEmpty() ? QVector<QVector<MessageRecord>>{} : tailsFromJson(QJsonDocument::fromJson(json.toUtf8()).array());
}

ChatDatabase::ChatDatabase(const QString& path)
    : m_connection(QStringLiteral("chats-") + QUuid::createUuid().toString(QUuid::WithoutBraces)) {
  QDir().mkpath(QFileInfo(path).absolutePath());
  m_check = checkChatDatabase(path);  // a damaged file goes aside first, the last backup in its place
  m_db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), m_connection);
  m_db.setDatabaseName(path);
  if (!m_db.open()) {
    fail(QStringLiteral("open %1").arg(path), m_db.lastError().text());
    return;
  }
  // WAL: a save appends its pages to a log (a streaming reply is saved often) instead of
  // journaling and rewriting them in place. NORMAL syncs at checkpoints only: with WAL a crash
  // of the app loses no commit, and a power cut may lose the last ones but never breaks the
  // file. Where WAL cannot be used (no shared memory on the filesystem) the file keeps its
  // journal and works the same.
  {
    QSqlQuery wal(m_db);
    if (!wal.exec(QStringLiteral("PRAGMA journal_mode = WAL")) || !wal.next() || wal.value(0).toString() != QLatin1String("wal"))
      qWarning("chat database: %s is not in WAL mode", qPrintable(path));
  }
  m_open = exec(QStringLiteral("PRAGMA synchronous = NORMAL")) && exec(QStringLiteral("PRAGMA foreign_keys = ON")) &&
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
                       addColumn(QStringLiteral("messages"), QStringLiteral("version_index INTEGER NOT NULL DEFAULT 0")) &&
                       addColumn(QStringLiteral("chats"), QStringLiteral("pinned INTEGER NOT NULL DEFAULT 0")) &&
                       addColumn(QStringLiteral("chats"), QStringLiteral("last_active INTEGER NOT NULL DEFAULT 0")) &&
                       addColumn(QStringLiteral("chats"), QStringLiteral("sampling TEXT NOT NULL DEFAULT ''")) &&
                       addColumn(QStringLiteral("chats"), QStringLiteral("remote_url TEXT NOT NULL DEFAULT ''")) &&
                       addColumn(QStringLiteral("chats"), QStringLiteral("remote_model TEXT NOT NULL DEFAULT ''")) &&
                       addColumn(QStringLiteral("chats"), QStringLiteral("last_error TEXT NOT NULL DEFAULT ''")) &&
                       addColumn(QStringLiteral("chats"), QStringLiteral("last_error_detail TEXT NOT NULL DEFAULT ''")) &&
                       addColumn(QStringLiteral("messages"), QStringLiteral("tools TEXT NOT NULL DEFAULT ''")) &&
                       addColumn(QStringLiteral("chats"), QStringLiteral("tools TEXT NOT NULL DEFAULT ''"));
  if (m_open) openSearchIndex();
  if (m_open && setting(QStringLiteral("schema_version")).isEmpty())
    setSetting(QStringLiteral("schema_version"), QString::number(kSchemaVersion));
  if (!m_open) return;
  if (m_check.damaged) {
    QSqlQuery count(m_db);
    if (count.exec(QStringLiteral("SELECT COUNT(*) FROM chats")) && count.next()) m_check.restoredChats = count.value(0).toInt();
    if (!m_check.keptAs.isEmpty()) m_check.recoveredChats = recoverFrom(m_check.keptAs);
    qWarning("chat database: %s", qPrintable(m_check.sentence()));
    return;  // the next start backs up what is here now
  }
  QString error;
  if (!backUpChatDatabase(m_db, path, kBackupEverySeconds, &error)) qWarning("chat database: no backup made: %s", qPrintable(error));
}

int ChatDatabase::recoverFrom(const QString& damaged) {
  const QString connection = m_connection + QStringLiteral("-damaged");
  QVector<ChatRecord> found;
  {
    QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), connection);
    db.setDatabaseName(damaged);
    db.setConnectOptions(QStringLiteral("QSQLITE_OPEN_READONLY"));
    QString error;
    if (db.open()) found = readChats(db, &error);
    db.close();
  }
  QSqlDatabase::removeDatabase(connection);
  std::set<ChatId> here;
  QSqlQuery ids(m_db);
  if (ids.exec(QStringLiteral("SELECT id FROM chats")))
    while (ids.next()) here.insert(ids.value(0).toLongLong());
  int added = 0;
  for (const ChatRecord& c : found)
    if (c.id > 0 && !here.count(c.id) && saveChat(c)) ++added;
  return added;
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
  if (!m_open) return {};
  QString error;
  QVector<ChatRecord> chats = readChats(m_db, &error);
  if (!error.isEmpty()) fail(QStringLiteral("load chats"), error);
  for (const ChatRecord& c : chats) m_saved[c.id] = c;
  return chats;
}

// Rows that cannot be read (a damaged file's) are left out, and the first failure said in *error.
QVector<ChatRecord> ChatDatabase::readChats(QSqlDatabase& db, QString* error) {
  QVector<ChatRecord> chats;
  QSqlQuery q(db);
  if (!q.exec(QStringLiteral("SELECT id, title, parent_id, forked_at, overrides_system, system_prompt, first_in_view, "
                             "context_policy, pinned, last_active, sampling, remote_url, remote_model, last_error, last_error_detail, "
                             "tools FROM chats ORDER BY id"))) {
    *error = q.lastError().text();
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
    c.pinned = q.value(8).toBool();
    c.lastActive = q.value(9).toLongLong();
    // '' : the app's defaults; a value out of range (edited by hand) falls back to them too.
    if (const QString sampling = q.value(10).toString(); !sampling.isEmpty())
      c.ownSampling = samplingFromJson(QJsonDocument::fromJson(sampling.toUtf8()).object());
    c.remote = {q.value(11).toString(), q.value(12).toString()};
    c.lastError = {q.value(13).toString(), q.value(14).toString()};
    if (const QString tools = q.value(15).toString(); !tools.isEmpty())
      c.tools = chatToolsFromJson(QJsonDocument::fromJson(tools.toUtf8()).object());
    chats.append(c);
  }
  QSqlQuery m(db);
  m.prepare(QStringLiteral("SELECT role, content, num_tokens, first_token_ms, tokens_per_second, finish_reason, versions, "
                           "version_index, tools FROM messages WHERE chat_id = ? ORDER BY position"));
  for (ChatRecord& c : chats) {
    m.addBindValue(c.id);
    if (!m.exec()) {
      if (error->isEmpty()) *error = QStringLiteral("the messages of chat %1: %2").arg(c.id).arg(m.lastError().text());
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
      if (const QString tools = m.value(8).toString(); !tools.isEmpty())
        toolFieldsFromJson(QJsonDocument::fromJson(tools.toUtf8()).object(), &r);
      c.messages.append(r);
    }
  }
  return chats;
}

ChatId ChatDatabase::newChatId() {
  if (!m_open) return -1;
  if (!m_db.transaction()) {
    fail(QStringLiteral("begin"), m_db.lastError().text());
    return -1;
  }
  // The first statement writes, so the transaction holds the write lock before it reads: two
  // connections bumping the counter at once take turns (Qt's SQLite waits on a busy file).
  // The largest saved id counts too: files written before the counter (and the chats of a
  // connection that gave ids another way) never see an id of theirs again.
  QSqlQuery q(m_db);
  const bool ok =
      q.exec(QStringLiteral("INSERT OR IGNORE INTO settings (key, value) VALUES ('%1', '0')").arg(kLastChatIdKey)) &&
      q.exec(QStringLiteral("UPDATE settings SET value = MAX(CAST(value AS INTEGER), (SELECT IFNULL(MAX(id), 0) FROM chats)) + 1 "
                            "WHERE key = '%1'").arg(kLastChatIdKey)) &&
      q.exec(QStringLiteral("SELECT value FROM settings WHERE key = '%1'").arg(kLastChatIdKey)) && q.next();
  const ChatId id = ok ? q.value(0).toLongLong() : -1;
  if (!ok) fail(QStringLiteral("new chat id"), q.lastError().text());
  q.finish();
  if (!ok || id <= 0) {
    m_db.rollback();
    return -1;
  }
  if (!m_db.commit()) {
    fail(QStringLiteral("commit"), m_db.lastError().text());
    m_db.rollback();
    return -1;
  }
  return id;
}

bool ChatDatabase::saveChat(const ChatRecord& chat) {
  if (!m_open) return false;
  const auto saved = m_saved.find(chat.id);
  const ChatRecord* before = saved == m_saved.end() ? nullptr : &saved->second;
  if (!m_db.transaction()) return fail(QStringLiteral("begin"), m_db.lastError().text());
  auto rollback = [this] {
    m_db.rollback();
    return false;
  };
  if (!saveChatRow(chat, before)) return rollback();
  // A chat this connection has not seen: whatever the file holds of it goes. Otherwise only
  // what follows its new end (an edit, a regenerate or a switch shortened it).
  const int keep = before ? static_cast<int>(std::min(before->messages.size(), chat.messages.size())) : 0;
  if (!before || before->messages.size() > chat.messages.size()) {
    QSqlQuery del(m_db);
    del.prepare(QStringLiteral("DELETE FROM messages WHERE chat_id = ? AND position >= ?"));
    del.addBindValue(chat.id);
    del.addBindValue(keep);
    if (!del.exec()) {
      fail(QStringLiteral("save chat %1").arg(chat.id), del.lastError().text());
      return rollback();
    }
    if (!unindexMessages(chat.id, keep)) return rollback();
  }
  for (int i = 0; i < chat.messages.size(); ++i)
    if (i >= keep || !sameAsSaved(before->messages[i], chat.messages[i]))
      if (!saveMessage(chat.id, i, chat.messages[i])) return rollback();
  if (!m_db.commit()) {
    fail(QStringLiteral("commit"), m_db.lastError().text());
    return rollback();
  }
  m_saved[chat.id] = chat;
  return true;
}

// The chat's row, when it is new or differs. Not INSERT OR REPLACE: replacing the row deletes
// it first, and its messages with it (ON DELETE CASCADE).
bool ChatDatabase::saveChatRow(const ChatRecord& chat, const ChatRecord* before) {
  if (before && sameChatRow(*before, chat)) return true;
  const QVariantList values{text(chat.title),       chat.parentId,    chat.forkedAtMessage,
                            chat.overridesSystemPrompt ? 1 : 0, text(chat.systemPrompt), chat.firstInView,
                            static_cast<int>(chat.contextPolicy), chat.pinned ? 1 : 0, chat.lastActive,
                            chat.ownSampling ? QString::fromUtf8(QJsonDocument(samplingToJson(*chat.ownSampling)).toJson(QJsonDocument::Compact))
                                             : QString(QLatin1String("")),
                            text(chat.remote.url), text(chat.remote.model), text(chat.lastError.sentence),
                            text(chat.lastError.detail),
                            chat.tools.isDefault() ? QString(QLatin1String(""))
                                                   : QString::fromUtf8(QJsonDocument(chatToolsToJson(chat.tools)).toJson(QJsonDocument::Compact)),
                            chat.id};
  QSqlQuery q(m_db);
  q.prepare(QStringLiteral("UPDATE chats SET title = ?, parent_id = ?, forked_at = ?, overrides_system = ?, system_prompt = ?, "
                           "first_in_view = ?, context_policy = ?, pinned = ?, last_active = ?, sampling = ?, remote_url = ?, "
                           "remote_model = ?, last_error = ?, last_error_detail = ?, tools = ? WHERE id = ?"));
  for (const QVariant& v : values) q.addBindValue(v);
  if (!q.exec()) return fail(QStringLiteral("save chat %1").arg(chat.id), q.lastError().text());
  if (q.numRowsAffected() > 0) return true;
  q.prepare(QStringLiteral("INSERT INTO chats (title, parent_id, forked_at, overrides_system, system_prompt, first_in_view, "
                           "context_policy, pinned, last_active, sampling, remote_url, remote_model, last_error, last_error_detail, tools, id) "
                           "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  for (const QVariant& v : values) q.addBindValue(v);
  return q.exec() || fail(QStringLiteral("save chat %1").arg(chat.id), q.lastError().text());
}

bool ChatDatabase::saveMessage(ChatId id, int position, const MessageRecord& m) {
  QSqlQuery q(m_db);
  q.prepare(QStringLiteral("INSERT OR REPLACE INTO messages (chat_id, position, role, content, num_tokens, first_token_ms, "
                           "tokens_per_second, finish_reason, versions, version_index, tools) "
                           "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  q.addBindValue(id);
  q.addBindValue(position);
  q.addBindValue(text(m.role));
  q.addBindValue(text(m.content));
  q.addBindValue(m.metrics.numTokens);
  q.addBindValue(m.metrics.secondsToFirstToken * 1000.0);
  q.addBindValue(m.metrics.tokensPerSecond);
  q.addBindValue(text(m.metrics.finishReason));
  q.addBindValue(versionsToJson(m.otherVersions));
  q.addBindValue(m.versionIndex);
  const QJsonObject tools = toolFieldsToJson(m);
  q.addBindValue(tools.isEmpty() ? QStringLiteral("") : QString::fromUtf8(QJsonDocument(tools).toJson(QJsonDocument::Compact)));
  if (!q.exec()) return fail(QStringLiteral("save message %1 of chat %2").arg(position).arg(id), q.lastError().text());
  if (!m_searchable || position >= kIndexRowsPerChat) return true;
  QSqlQuery index(m_db);
  index.prepare(QStringLiteral("INSERT OR REPLACE INTO message_search (rowid, content) VALUES (?, ?)"));
  index.addBindValue(id * kIndexRowsPerChat + position);
  index.addBindValue(text(m.content));
  return index.exec() || fail(QStringLiteral("index message %1 of chat %2").arg(position).arg(id), index.lastError().text());
}

bool ChatDatabase::removeChat(ChatId id) {
  if (!m_open) return false;
  if (!m_db.transaction()) return fail(QStringLiteral("begin"), m_db.lastError().text());
  QSqlQuery q(m_db);
  q.prepare(QStringLiteral("DELETE FROM chats WHERE id = ?"));
  q.addBindValue(id);
  if (!q.exec() || !unindexMessages(id, 0) || !m_db.commit()) {
    fail(QStringLiteral("remove chat %1").arg(id), q.lastError().text());
    m_db.rollback();
    return false;
  }
  m_saved.erase(id);
  return true;
}

void ChatDatabase::openSearchIndex() {
  QSqlQuery q(m_db);
  const bool existed = q.exec(QStringLiteral("SELECT 1 FROM sqlite_master WHERE name = 'message_search'")) && q.next();
  q.finish();
  // unicode61 folds case and, with remove_diacritics 2, accents: "cafe" finds "Café".
  if (!q.exec(QStringLiteral("CREATE VIRTUAL TABLE IF NOT EXISTS message_search USING fts5(content, "
                             "tokenize = 'unicode61 remove_diacritics 2')"))) {
    qWarning("chat database: no message search (%s)", qPrintable(q.lastError().text()));
    return;
  }
  m_searchable = true;
  // A file from before the index: its messages are indexed once.
  if (!existed)
    exec(QStringLiteral("INSERT INTO message_search (rowid, content) SELECT chat_id * %1 + position, content FROM messages "
                        "WHERE position < %1").arg(kIndexRowsPerChat));
}

bool ChatDatabase::unindexMessages(ChatId id, int from) {
  if (!m_searchable) return true;
  QSqlQuery q(m_db);
  q.prepare(QStringLiteral("DELETE FROM message_search WHERE rowid >= ? AND rowid < ?"));
  q.addBindValue(id * kIndexRowsPerChat + from);
  q.addBindValue((id + 1) * kIndexRowsPerChat);
  return q.exec() || fail(QStringLiteral("unindex chat %1").arg(id), q.lastError().text());
}

QVector<MessageHit> ChatDatabase::searchMessages(const QString& words, int limit, QString* error) {
  QVector<MessageHit> hits;
  if (!m_searchable) {
    if (error) *error = m_open ? QStringLiteral("this SQLite has no full-text search (FTS5)") : m_lastError;
    return hits;
  }
  // Each word a quoted prefix ("pag"*): FTS5's own syntax (AND, NEAR, columns) stays out of
  // what the user typed, and a word being typed already finds.
  QStringList terms;
  for (QString w : words.split(QRegularExpression(QStringLiteral("\\s+")), Qt::SkipEmptyParts))
    terms << QLatin1Char('"') + w.replace(QLatin1Char('"'), QStringLiteral("\"\"")) + QStringLiteral("\"*");
  if (terms.isEmpty()) return hits;
  QSqlQuery q(m_db);
  q.prepare(QStringLiteral("SELECT rowid, snippet(message_search, 0, char(2), char(3), '…', 12) FROM message_search "
                           "WHERE message_search MATCH ? ORDER BY rank LIMIT ?"));
  q.addBindValue(terms.join(QLatin1Char(' ')));
  q.addBindValue(limit);
  if (!q.exec()) {
    if (error) *error = q.lastError().text();
    return hits;
  }
  while (q.next()) {
    const qint64 row = q.value(0).toLongLong();
    hits.append({.chat = row / kIndexRowsPerChat, .message = static_cast<int>(row % kIndexRowsPerChat),
                 .snippet = q.value(1).toString()});
  }
  return hits;
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
