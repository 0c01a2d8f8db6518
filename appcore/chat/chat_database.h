#pragma once
// Chats saved in SQLite through Qt SQL: one row per chat, one per message, and the app's
// settings (the shared system prompt). Each save is one transaction, so a crash never leaves a
// half-written chat behind, and writes only the rows that changed since this connection last
// saved (or loaded) the chat: a reply streaming in rewrites its own message, not the chat. The
// file is in WAL mode. One app writes it at a time (appcore/session/instance_lock.h); chat ids come
// from the file all the same, so two connections never give one id twice. The stored values
// (column meanings, the schema version, the id counter) are written to disk: never renumber
// or reuse them.
//
// Message text is searched through SQLite's FTS5 (a full-text index of every message as shown,
// kept in the same transactions as the messages): see searchMessages.

#include <QSqlDatabase>
#include <QString>
#include <QVector>

#include <map>

#include "appcore/chat/chat_record.h"
#include "appcore/chat/database_recovery.h"

// A message that matched a search: its chat, its index in the chat, and a few words around the
// match, each matched word between kMatchStart and kMatchEnd.
struct MessageHit {
  ChatId chat = -1;
  int message = 0;
  QString snippet;
  static constexpr QChar kMatchStart = QChar(0x02), kMatchEnd = QChar(0x03);
};

class ChatDatabase {
 public:
  // Opens (creating it and its folder) the file; errors() says why when it could not.
  explicit ChatDatabase(const QString& path);
  ~ChatDatabase();
  ChatDatabase(const ChatDatabase&) = delete;
  ChatDatabase& operator=(const ChatDatabase&) = delete;

  // The default file: chats.sqlite in QStandardPaths::AppDataLocation (XDG data dir).
  static QString defaultPath();

  bool isOpen() const { return m_open; }
  // What the check before opening found (appcore/chat/database_recovery.h): a damaged file set
  // aside, what came back; the window says it.
  const DatabaseCheck& startupCheck() const { return m_check; }
  QString lastError() const { return m_lastError; }

  QVector<ChatRecord> loadChats();  // by id
  // A new chat's id: never given before by this file, a deleted chat's included (a counter in
  // the settings, bumped in a transaction; at least one past the largest id saved). -1 when
  // the file is not open.
  ChatId newChatId();
  // Makes the saved chat this one: its row and the messages that differ from what this
  // connection saved or loaded last (all of them for a chat it has not seen), and removes
  // messages past its end.
  bool saveChat(const ChatRecord& chat);
  bool removeChat(ChatId id);
  // The messages holding every one of the words (each as a prefix: "pag" finds "paged"; case
  // and accents ignored), best match first, at most `limit`. Only the versions shown are indexed.
  // Empty, with *error set, when the file is not open or its SQLite has no FTS5.
  QVector<MessageHit> searchMessages(const QString& words, int limit, QString* error = nullptr);
  QString setting(const QString& key, const QString& fallback = {});
  bool setSetting(const QString& key, const QString& value);
  // A message's other versions, as the messages table keeps them (JSON; "" for none).
  static QString versionsToJson(const QVector<QVector<MessageRecord>>& versions);
  static QVector<QVector<MessageRecord>> versionsFromJson(const QString& json);
  static constexpr qint64 kBackupEverySeconds = 24 * 3600;

 private:
  bool exec(const QString& sql);
  bool addColumn(const QString& table, const QString& definition);  // unless the table has it
  bool fail(const QString& what, const QString& error);
  bool saveChatRow(const ChatRecord& chat, const ChatRecord* before);
  bool saveMessage(ChatId id, int position, const MessageRecord& m);
  static QVector<ChatRecord> readChats(QSqlDatabase& db, QString* error);
  // The chats still readable in the damaged file that this one lacks, added; how many.
  int recoverFrom(const QString& damaged);
  void openSearchIndex();
  // The index's rows of chat id from message `from` on go (all of its rows: from 0).
  bool unindexMessages(ChatId id, int from);

  QString m_connection;
  // Each chat as this connection last saved or loaded it: what the next save is compared with.
  std::map<ChatId, ChatRecord> m_saved;
  QSqlDatabase m_db;
  bool m_open = false;
  bool m_searchable = false;  // the FTS5 index exists and is kept
  QString m_lastError;
  DatabaseCheck m_check;
};
