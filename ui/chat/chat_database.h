#pragma once
// Chats saved in SQLite through Qt SQL: one row per chat, one per message, and the app's
// settings (the shared system prompt). Each save is one transaction, so a crash never leaves a
// half-written chat behind. The stored values (column meanings, the schema version) are
// written to disk: never renumber or reuse them.

#include <QSqlDatabase>
#include <QString>
#include <QVector>

#include "ui/chat/chat_record.h"

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
  QString lastError() const { return m_lastError; }

  QVector<ChatRecord> loadChats();  // by id
  bool saveChat(const ChatRecord& chat);  // replaces the chat's row and all its messages
  bool removeChat(ChatId id);
  QString setting(const QString& key, const QString& fallback = {});
  bool setSetting(const QString& key, const QString& value);
  // A message's other versions, as the messages table keeps them (JSON; "" for none).
  static QString versionsToJson(const QVector<QVector<MessageRecord>>& versions);
  static QVector<QVector<MessageRecord>> versionsFromJson(const QString& json);

 private:
  bool exec(const QString& sql);
  bool addColumn(const QString& table, const QString& definition);  // unless the table has it
  bool fail(const QString& what, const QString& error);

  QString m_connection;
  QSqlDatabase m_db;
  bool m_open = false;
  QString m_lastError;
};
