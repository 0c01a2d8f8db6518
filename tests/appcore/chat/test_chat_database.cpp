// The chat database on its own (no model): chat ids come from the file, so two connections
// never give one id twice and a deleted chat's id is never given again (an older file without
// the counter included); a save writes only the rows that changed since this connection saved
// the chat, and changing a chat's row keeps its messages; the file is in WAL mode; the message
// search (FTS5) follows every save, edit and delete, and a file from before it is indexed on open;
// a chat's pin and last activity are saved.

#include <QtTest>

#include <QSqlDatabase>
#include <QSqlQuery>
#include <QTemporaryDir>

#include "appcore/chat/chat_database.h"

namespace {

MessageRecord message(const QString& role, const QString& content) { return {.role = role, .content = content}; }

// A chat with an id from db and these messages.
ChatRecord newChat(ChatDatabase& db, const QString& title, const QVector<MessageRecord>& messages = {}) {
  ChatRecord c;
  c.id = db.newChatId();
  c.title = title;
  c.messages = messages;
  return c;
}

QStringList contents(const ChatRecord& c) {
  QStringList out;
  for (const MessageRecord& m : c.messages) out << m.content;
  return out;
}

// The file's chats as a new connection reads them.
QVector<ChatRecord> reload(const QString& path) { return ChatDatabase(path).loadChats(); }

// Runs SQL on the file behind the ChatDatabase's back: a second connection of plain Qt SQL.
void rawExec(const QString& path, const QString& sql) {
  {
    QSqlDatabase raw = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("raw"));
    raw.setDatabaseName(path);
    QVERIFY(raw.open());
    QSqlQuery q(raw);
    QVERIFY2(q.exec(sql), qPrintable(sql));
  }
  QSqlDatabase::removeDatabase(QStringLiteral("raw"));
}

}  // namespace

class TestChatDatabase : public QObject {
  Q_OBJECT
  QTemporaryDir m_dir;
  int m_files = 0;
  QString freshPath() { return m_dir.filePath(QStringLiteral("chats-%1.sqlite").arg(++m_files)); }

 private slots:
  // The tester's two apps on one file, each creating chats in turn: with ids from "the
  // largest one in memory plus one" they gave the same ids and 9 of 13 chats survived.
  void twoConnectionsNeverGiveTheSameId() {
    const QString path = freshPath();
    ChatDatabase a(path), b(path);
    QVERIFY(a.isOpen() && b.isOpen());
    QVector<ChatId> ids;
    for (int i = 0; i < 13; ++i) {
      ChatDatabase& db = i % 2 == 0 ? a : b;
      const ChatRecord c = newChat(db, QStringLiteral("chat %1").arg(i), {message(QStringLiteral("user"), QString::number(i))});
      QVERIFY(db.saveChat(c));
      ids << c.id;
    }
    QCOMPARE(ids, (QVector<ChatId>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}));
    const QVector<ChatRecord> saved = reload(path);
    QCOMPARE(saved.size(), 13);
    for (int i = 0; i < 13; ++i) {
      QCOMPARE(saved[i].id, ChatId(i + 1));
      QCOMPARE(saved[i].title, QStringLiteral("chat %1").arg(i));
      QCOMPARE(contents(saved[i]), QStringList{QString::number(i)});
    }
  }

  void aDeletedChatsIdIsNeverGivenAgain() {
    const QString path = freshPath();
    {
      ChatDatabase db(path);
      for (int i = 0; i < 3; ++i) QVERIFY(db.saveChat(newChat(db, QStringLiteral("chat"))));
      QVERIFY(db.removeChat(3));  // the largest: "max + 1" would give 3 again
      QCOMPARE(db.newChatId(), ChatId(4));
    }
    ChatDatabase again(path);
    QCOMPARE(again.newChatId(), ChatId(5));  // the counter is in the file
    QCOMPARE(again.loadChats().size(), 2);
  }

  // A file written before the counter: its chats keep their ids, new ones come after the largest.
  void anOlderFileGivesIdsPastItsChats() {
    const QString path = freshPath();
    {
      ChatDatabase db(path);
      ChatRecord five, nine;
      five.id = 5;
      nine.id = 9;
      five.title = nine.title = QStringLiteral("old");
      QVERIFY(db.saveChat(five) && db.saveChat(nine));
    }
    rawExec(path, QStringLiteral("DELETE FROM settings WHERE key = 'last_chat_id'"));
    ChatDatabase db(path);
    QCOMPARE(db.loadChats().size(), 2);
    QCOMPARE(db.newChatId(), ChatId(10));
    QCOMPARE(db.newChatId(), ChatId(11));
  }

  // A reply streaming in, a new turn: the save writes those messages, not the chat. Seen from
  // a message changed behind the connection's back, which a save that rewrote the chat would
  // put back.
  void aSaveWritesOnlyTheMessagesThatChanged() {
    const QString path = freshPath();
    ChatDatabase db(path);
    ChatRecord c = newChat(db, QStringLiteral("turns"), {message(QStringLiteral("user"), QStringLiteral("question")),
                                                        message(QStringLiteral("assistant"), QStringLiteral("Par"))});
    QVERIFY(db.saveChat(c));
    rawExec(path, QStringLiteral("UPDATE messages SET content = 'changed behind its back' WHERE position = 0"));

    c.messages[1].content = QStringLiteral("Paris.");
    c.messages[1].metrics.numTokens = 3;
    c.messages[1].metrics.finishReason = QStringLiteral("stop");
    c.messages.append(message(QStringLiteral("user"), QStringLiteral("And Italy?")));
    QVERIFY(db.saveChat(c));
    ChatRecord saved = reload(path).value(0);
    QCOMPARE(contents(saved), (QStringList{QStringLiteral("changed behind its back"), QStringLiteral("Paris."),
                                           QStringLiteral("And Italy?")}));
    QCOMPARE(saved.messages[1].metrics.numTokens, 3);
    QCOMPARE(saved.messages[1].metrics.finishReason, QStringLiteral("stop"));

    // Shorter (a regenerate took the reply out): the messages past its end go.
    c.messages.resize(1);
    QVERIFY(db.saveChat(c));
    QCOMPARE(contents(reload(path).value(0)), QStringList{QStringLiteral("changed behind its back")});

    // A connection that has not seen the chat writes it whole.
    ChatDatabase other(path);
    QVERIFY(other.saveChat(c));
    QCOMPARE(contents(reload(path).value(0)), QStringList{QStringLiteral("question")});
  }

  // The chat's row is updated in place: replacing it would delete its messages (ON DELETE CASCADE).
  void changingTheChatRowKeepsItsMessages() {
    const QString path = freshPath();
    ChatDatabase db(path);
    ChatRecord c = newChat(db, QStringLiteral("before"), {message(QStringLiteral("user"), QStringLiteral("question")),
                                                         message(QStringLiteral("assistant"), QStringLiteral("answer"))});
    QVERIFY(db.saveChat(c));
    c.title = QStringLiteral("after");
    c.firstInView = 1;
    c.contextPolicy = ContextPolicy::stopAndAsk;
    QVERIFY(db.saveChat(c));
    const ChatRecord saved = reload(path).value(0);
    QCOMPARE(saved.title, QStringLiteral("after"));
    QCOMPARE(saved.firstInView, 1);
    QCOMPARE(saved.contextPolicy, ContextPolicy::stopAndAsk);
    QCOMPARE(contents(saved), (QStringList{QStringLiteral("question"), QStringLiteral("answer")}));
  }

  // A message's versions are part of its row: a new version rewrites the row, switching back too.
  void versionsAreSavedWithTheirMessage() {
    const QString path = freshPath();
    ChatDatabase db(path);
    ChatRecord c = newChat(db, QStringLiteral("versions"), {message(QStringLiteral("user"), QStringLiteral("question")),
                                                           message(QStringLiteral("assistant"), QStringLiteral("first"))});
    QVERIFY(db.saveChat(c));
    c.messages[1].otherVersions = {{message(QStringLiteral("assistant"), QStringLiteral("first"))}};
    c.messages[1].content = QStringLiteral("second");
    c.messages[1].versionIndex = 1;
    QVERIFY(db.saveChat(c));
    ChatRecord saved = reload(path).value(0);
    QCOMPARE(saved.messages[1].content, QStringLiteral("second"));
    QCOMPARE(saved.messages[1].numVersions(), 2);
    QVERIFY(switchVersion(c.messages, 1, 0));
    QVERIFY(db.saveChat(c));
    saved = reload(path).value(0);
    QCOMPARE(saved.messages[1].content, QStringLiteral("first"));
    QCOMPARE(saved.messages[1].versionIndex, 0);
    QCOMPARE(saved.messages[1].otherVersions.value(0).value(0).content, QStringLiteral("second"));
  }

  // A reply's tool calls and a tool message's call id and function are kept with the messages,
  // and a change to them alone is saved.
  void toolCallsAreSavedWithTheirMessages() {
    const QString path = freshPath();
    ChatDatabase db(path);
    ChatRecord c = newChat(db, QStringLiteral("tools"), {message(QStringLiteral("user"), QStringLiteral("read it"))});
    c.messages.append({.role = QStringLiteral("assistant"),
                       .content = QString(),
                       .toolCalls = {{QStringLiteral("call_7"), QStringLiteral("read_file"), QStringLiteral(R"({"path":"a"})")},
                                     {QStringLiteral("call_8"), QStringLiteral("add"), QStringLiteral(R"({"a":1,"b":2})")}}});
    c.messages.append({.role = QStringLiteral("tool"), .content = QStringLiteral("text of a"),
                       .toolCallId = QStringLiteral("call_7"), .toolName = QStringLiteral("read_file")});
    QVERIFY(db.saveChat(c));
    ChatRecord saved = reload(path).value(0);
    QCOMPARE(saved.messages.size(), 3);
    QCOMPARE(saved.messages[1].toolCalls, c.messages[1].toolCalls);
    QCOMPARE(saved.messages[2].toolCallId, QStringLiteral("call_7"));
    QCOMPARE(saved.messages[2].toolName, QStringLiteral("read_file"));
    QCOMPARE(saved.messages[0].toolCalls.size(), 0);
    c.messages[1].toolCalls[1].arguments = QStringLiteral(R"({"a":2,"b":2})");
    QVERIFY(db.saveChat(c));
    QCOMPARE(reload(path).value(0).messages[1].toolCalls[1].arguments, QStringLiteral(R"({"a":2,"b":2})"));
  }

  void theFileIsInWalMode() {
    const QString path = freshPath();
    ChatDatabase db(path);
    QVERIFY(db.saveChat(newChat(db, QStringLiteral("wal"))));
    QVERIFY(QFileInfo::exists(path + QStringLiteral("-wal")));  // the log, next to the file while it is open
    QSqlDatabase raw = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("mode"));
    {
      raw.setDatabaseName(path);
      QVERIFY(raw.open());
      QSqlQuery q(raw);
      QVERIFY(q.exec(QStringLiteral("PRAGMA journal_mode")) && q.next());
      QCOMPARE(q.value(0).toString(), QStringLiteral("wal"));  // kept in the file
    }
    raw = QSqlDatabase();
    QSqlDatabase::removeDatabase(QStringLiteral("mode"));
  }

  // Each word a prefix, case and accents folded, user text never read as FTS5 syntax; the hit
  // names its chat and message, its match marked.
  void searchFindsMessagesAsTheyAreNow() {
    const QString path = freshPath();
    ChatDatabase db(path);
    ChatRecord a = newChat(db, QStringLiteral("A"), {message(QStringLiteral("user"), QStringLiteral("Tell me about the Café de Flore")),
                                                     message(QStringLiteral("assistant"), QStringLiteral("A famous café in Paris."))});
    ChatRecord b = newChat(db, QStringLiteral("B"), {message(QStringLiteral("user"), QStringLiteral("Paged attention, please"))});
    QVERIFY(db.saveChat(a));
    QVERIFY(db.saveChat(b));
    QString error;
    QVector<MessageHit> hits = db.searchMessages(QStringLiteral("cafe"), 10, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QCOMPARE(hits.size(), 2);
    for (const MessageHit& h : hits) QCOMPARE(h.chat, a.id);
    QVERIFY(hits[0].snippet.contains(QString(MessageHit::kMatchStart) + QStringLiteral("Caf")) ||
            hits[0].snippet.contains(QString(MessageHit::kMatchStart) + QStringLiteral("caf")));
    hits = db.searchMessages(QStringLiteral("PAG atten"), 10);  // prefixes, all of them
    QCOMPARE(hits.size(), 1);
    QCOMPARE(hits[0].chat, b.id);
    QCOMPARE(hits[0].message, 0);
    QVERIFY(db.searchMessages(QStringLiteral("paged cafe"), 10).isEmpty());
    // FTS5's own syntax in what the user typed is only text.
    for (const char* hostile : {"\"", "NEAR(", "content:x", "a OR", "*", "\"\"*", "-x", "^", "Paged)"}) {
      error.clear();
      const QVector<MessageHit> found = db.searchMessages(QString::fromLatin1(hostile), 10, &error);
      QVERIFY2(error.isEmpty(), qPrintable(QStringLiteral("%1: %2").arg(QLatin1String(hostile), error)));
      QCOMPARE(found.size(), QLatin1String(hostile) == QLatin1String("Paged)") ? 1 : 0);
    }
    // An edit, a shorter chat, a delete: the index follows.
    a.messages[1].content = QStringLiteral("A famous bistro.");
    QVERIFY(db.saveChat(a));
    QCOMPARE(db.searchMessages(QStringLiteral("cafe"), 10).size(), 1);
    QCOMPARE(db.searchMessages(QStringLiteral("bistro"), 10).size(), 1);
    a.messages.removeLast();
    QVERIFY(db.saveChat(a));
    QVERIFY(db.searchMessages(QStringLiteral("bistro"), 10).isEmpty());
    QVERIFY(db.removeChat(a.id));
    QVERIFY(db.searchMessages(QStringLiteral("cafe"), 10).isEmpty());
    QCOMPARE(db.searchMessages(QStringLiteral("paged"), 10).size(), 1);
  }

  // A file written before the search index: its messages are found after the first open.
  void aFileFromBeforeTheIndexIsIndexedOnOpen() {
    const QString path = freshPath();
    {
      ChatDatabase db(path);
      QVERIFY(db.saveChat(newChat(db, QStringLiteral("old"), {message(QStringLiteral("user"), QStringLiteral("zebra crossing"))})));
    }
    rawExec(path, QStringLiteral("DROP TABLE message_search"));
    ChatDatabase db(path);
    const QVector<MessageHit> hits = db.searchMessages(QStringLiteral("zebra"), 10);
    QCOMPARE(hits.size(), 1);
    QCOMPARE(hits[0].message, 0);
  }

  void pinAndLastActivityAreSaved() {
    const QString path = freshPath();
    ChatDatabase db(path);
    ChatRecord c = newChat(db, QStringLiteral("pinned"));
    c.pinned = true;
    c.lastActive = 1'700'000'000'123;
    QVERIFY(db.saveChat(c));
    const QVector<ChatRecord> back = reload(path);
    QCOMPARE(back.size(), 1);
    QVERIFY(back[0].pinned);
    QCOMPARE(back[0].lastActive, c.lastActive);
  }

  // A chat's own sampling is saved with its row (a change of it alone is saved too); none
  // reads back as none, and a value edited out of range by hand as the app's defaults.
  void theChatsOwnSamplingIsSaved() {
    const QString path = freshPath();
    ChatDatabase db(path);
    ChatRecord c = newChat(db, QStringLiteral("own"));
    QVERIFY(db.saveChat(c));
    QVERIFY(!reload(path)[0].ownSampling);
    TurnSettings own;
    own.temperature = 1.25;
    own.minP = 0.1;
    own.frequencyPenalty = 0.5;
    own.maxTokens = 64;
    own.seed = (quint64{1} << 60) + 3;
    c.ownSampling = own;
    QVERIFY(db.saveChat(c));
    QVector<ChatRecord> back = reload(path);
    QVERIFY(back[0].ownSampling.has_value());
    QVERIFY(sameSampling(*back[0].ownSampling, own));
    c.ownSampling->maxTokens = 65;
    QVERIFY(db.saveChat(c));
    QCOMPARE(reload(path)[0].ownSampling->maxTokens, 65);
    rawExec(path, QStringLiteral("UPDATE chats SET sampling = '{\"temperature\": 99}'"));
    QVERIFY(!reload(path)[0].ownSampling);
  }
};

QTEST_GUILESS_MAIN(TestChatDatabase)
#include "test_chat_database.moc"
