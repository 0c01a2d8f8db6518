// A damaged chat database is said and kept, never silently replaced (issue 46, item 5): a file
// with a scribbled header, one truncated, one with 8 KB scribbled in the middle are each found
// by the check before opening (SQLite's quick_check), renamed aside untouched (byte for byte),
// and the app starts from the last backup, with the chats still readable in the damaged file
// added back. A sound file is left as it is and backed up at most once a day (VACUUM INTO).

#include <QtTest>

#include <QDir>
#include <QFile>
#include <QTemporaryDir>

#include "appcore/chat/chat_database.h"

namespace {

ChatRecord chatTitled(ChatDatabase& db, const QString& title, int messages = 2) {
  ChatRecord c;
  c.id = db.newChatId();
  c.title = title;
  for (int i = 0; i < messages; ++i)
    c.messages.append({.role = i % 2 ? QStringLiteral("assistant") : QStringLiteral("user"),
                       .content = QStringLiteral("%1, message %2: ").arg(title).arg(i) + QString(200, QLatin1Char('x'))});
  return c;
}

QStringList titles(const QVector<ChatRecord>& chats) {
  QStringList out;
  for (const ChatRecord& c : chats) out << c.title;
  out.sort();
  return out;
}

QByteArray readAll(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

void writeAll(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
  QCOMPARE(f.write(bytes), bytes.size());
}

// The backup made older than a day: the next open takes a new one.
void ageBackup(const QString& path) {
  QFile backup(chatBackupPath(path));
  QVERIFY(backup.open(QIODevice::ReadWrite));
  QVERIFY(backup.setFileTime(QDateTime::currentDateTime().addDays(-2), QFileDevice::FileModificationTime));
}

}  // namespace

class TestDamagedDatabase : public QObject {
  Q_OBJECT
  QTemporaryDir m_dir;
  int m_files = 0;
  QString freshPath() { return m_dir.filePath(QStringLiteral("chats-%1.sqlite").arg(++m_files)); }

  // A file with chats one and two in its backup (taken at an open a day later), and three
  // saved after it.
  QString fileWithABackup() {
    const QString path = freshPath();
    {
      ChatDatabase db(path);
      db.saveChat(chatTitled(db, "one"));
      db.saveChat(chatTitled(db, "two"));
    }
    ageBackup(path);
    {
      ChatDatabase db(path);  // backs up one and two
      db.saveChat(chatTitled(db, "three"));
    }
    return path;
  }

 private slots:
  void aSoundFileIsKeptAndBackedUpDaily() {
    const QString path = freshPath();
    {
      ChatDatabase db(path);
      QVERIFY(!db.startupCheck().damaged);
      db.saveChat(chatTitled(db, "one"));
    }
    QVERIFY(QFile::exists(chatBackupPath(path)));
    const QDateTime first = QFileInfo(chatBackupPath(path)).lastModified();
    {
      ChatDatabase db(path);
      QVERIFY(!db.startupCheck().damaged);
      QCOMPARE(titles(db.loadChats()), QStringList{"one"});
    }
    QCOMPARE(QFileInfo(chatBackupPath(path)).lastModified(), first);  // not a day old: not taken again
    QCOMPARE(QDir(m_dir.path()).entryList({QStringLiteral("*.damaged-*")}).size(), 0);
  }

  void aScribbledHeaderGoesAsideAndTheBackupComesBack() {
    const QString path = fileWithABackup();
    QByteArray bytes = readAll(path);
    for (int i = 0; i < 100; ++i) bytes[i] = static_cast<char>(0xA5 ^ i);
    writeAll(path, bytes);
    ChatDatabase db(path);
    const DatabaseCheck& check = db.startupCheck();
    QVERIFY(check.damaged);
    QVERIFY2(!check.sqliteSays.isEmpty(), "SQLite's words");
    QVERIFY(QFile::exists(check.keptAs));
    QCOMPARE(readAll(check.keptAs), bytes);  // kept as it was, not "repaired"
    QVERIFY(check.backupFrom.isValid());
    QCOMPARE(check.restoredChats, 2);
    QVERIFY(db.isOpen());
    QCOMPARE(titles(db.loadChats()), (QStringList{"one", "two"}));
    QVERIFY2(check.sentence().contains(check.keptAs) && check.sentence().contains(QStringLiteral("2 chats came back from the backup")),
             qPrintable(check.sentence()));
    // New chats get ids past every id the backup knew.
    const ChatId next = db.newChatId();
    for (const ChatRecord& c : db.loadChats()) QVERIFY(next > c.id);
  }

  void aTruncatedFileGoesAside() {
    const QString path = fileWithABackup();
    const QByteArray bytes = readAll(path);
    writeAll(path, bytes.left(bytes.size() / 2 + 100));
    ChatDatabase db(path);
    QVERIFY(db.startupCheck().damaged);
    QVERIFY(QFile::exists(db.startupCheck().keptAs));
    QVERIFY(titles(db.loadChats()).contains(QStringLiteral("one")));
  }

  // 8 KB scribbled mid-file: the file still opens, and SQLite only says it is malformed when
  // asked. What can be read of it is added back to the backup's chats, and nothing else.
  void aScribbledMiddleIsFoundAndWhatReadsIsRecovered() {
    const QString path = freshPath();
    QStringList all;
    {
      ChatDatabase db(path);
      for (int i = 0; i < 60; ++i) {
        all << QStringLiteral("chat %1").arg(i, 2, 10, QLatin1Char('0'));
        db.saveChat(chatTitled(db, all.last(), 6));
      }
    }
    QByteArray bytes = readAll(path);
    QVERIFY(bytes.size() > 64 * 1024);
    const qsizetype middle = bytes.size() / 2 & ~qsizetype(4095);
    for (qsizetype i = middle; i < middle + 8192; ++i) bytes[i] = static_cast<char>((i * 131) & 0xFF);
    writeAll(path, bytes);
    ChatDatabase db(path);
    const DatabaseCheck& check = db.startupCheck();
    QVERIFY2(check.damaged, "8 KB of garbage inside went unseen");
    QVERIFY(QFile::exists(check.keptAs));
    // Every chat there now is one that was saved, whole or not at all... a chat back is a chat that was.
    for (const ChatRecord& c : db.loadChats()) QVERIFY2(all.contains(c.title), qPrintable(c.title));
    QCOMPARE(check.recoveredChats + check.restoredChats, static_cast<int>(db.loadChats().size()));
  }
};

QTEST_GUILESS_MAIN(TestDamagedDatabase)
#include "test_damaged_database.moc"
