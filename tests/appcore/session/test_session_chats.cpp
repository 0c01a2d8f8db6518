// What a user does to chats, through the session alone (no widget is linked): an edited question
// makes a new version of the conversation with the old one kept, the search finds titles and
// words in messages, a chat goes to a file and comes back as a chat of its own (a bad file is
// refused with the reason), a deleted chat's forks stay and everything survives a restart, and
// a duplicate is a chat of its own. What the window's suites reach through the window, here
// reached as the window reaches it.

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "appcore/chat/chat_export.h"
#include "support/session_driver.h"
#include "support/test_env.h"

using pagedchat::test::loadIntoSession;
using pagedchat::test::replyAndWait;

namespace {
MessageRecord message(const QString& role, const QString& content) { return {.role = role, .content = content}; }

// A chat of two turns, made as an import makes one (no model needed).
ChatRecord bakingChat() {
  ChatRecord r;
  r.title = QStringLiteral("Bread at home");
  r.messages = {message(QStringLiteral("user"), QStringLiteral("How long should I knead the dough?")),
                message(QStringLiteral("assistant"), QStringLiteral("Knead it for about ten minutes, until it is smooth.")),
                message(QStringLiteral("user"), QStringLiteral("And the oven?")),
                message(QStringLiteral("assistant"), QStringLiteral("Bake at 230 degrees for thirty minutes."))};
  return r;
}

QStringList contents(const QVector<MessageRecord>& messages) {
  QStringList out;
  for (const MessageRecord& m : messages) out << m.role + QLatin1Char(':') + m.content;
  return out;
}
}  // namespace

class TestSessionChats : public QObject {
  Q_OBJECT
  QString m_model;

 private slots:
  void initTestCase() {
    pagedchat::test::useFreshSessionFolder();
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    m_model = QString::fromStdString(model);
  }

  // Editing the second question: its new version gets a reply of its own, and the old
  // question with its reply is kept, shown again by switching back.
  void anEditedQuestionStartsANewVersion() {
    AppServices services;
    AppSession& session = services.session();
    QVERIFY(loadIntoSession(services, m_model));
    ChatController& chats = session.chats();
    const ChatId id = chats.create();
    QVERIFY(replyAndWait(session, id, QStringLiteral("Name a fruit.")));
    QVERIFY(replyAndWait(session, id, QStringLiteral("Name a colour.")));
    const QVector<MessageRecord> before = chats.chat(id)->record.messages;
    QCOMPARE(before.size(), 4);

    TurnSettings turn = session.settings().sampling;
    turn.temperature = 0;
    turn.maxTokens = 16;
    QSignalSpy ended(&chats, &ChatController::turnEnded);
    QVERIFY(chats.edit(id, 2, QStringLiteral("Name a vegetable."), turn, {}));
    QVERIFY(ended.wait(120000));
    const QVector<MessageRecord>& after = chats.chat(id)->record.messages;
    QCOMPARE(after.size(), 4);
    QCOMPARE(contents(after.mid(0, 2)), contents(before.mid(0, 2)));  // what came before the edit is untouched
    QCOMPARE(after[2].content, QStringLiteral("Name a vegetable."));
    QVERIFY(!after[3].content.isEmpty());
    QCOMPARE(after[2].numVersions(), 2);
    QCOMPARE(after[2].versionIndex, 1);
    QCOMPARE(contents(after[2].otherVersions[0]), contents(before.mid(2)));  // the old question and its reply, kept whole

    QVERIFY(chats.switchVersion(id, 2, -1));
    QCOMPARE(contents(chats.chat(id)->record.messages), contents(before));
    QCOMPARE(chats.chat(id)->record.messages[2].versionIndex, 0);
    QVERIFY(!chats.edit(id, 1, QStringLiteral("A reply is not a question."), turn, {}));  // only a question is edited
  }

  // Titles first, then messages; every word must be there, as the start of a word, with case
  // and accents ignored; a chat deleted is found no more.
  void theSearchFindsTitlesAndWordsInMessages() {
    pagedchat::test::useFreshSessionFolder();  // only these chats
    AppServices services;
    ChatController& chats = services.session().chats();
    const ChatId bread = chats.importChat(bakingChat());
    ChatRecord coffee;
    coffee.title = QStringLiteral("Mornings");
    coffee.messages = {message(QStringLiteral("user"), QStringLiteral("Is a Café crème the same as a latte?"))};
    const ChatId cafe = chats.importChat(coffee);

    QVector<ChatController::SearchResult> hits = chats.search(QStringLiteral("bread"));
    QVERIFY(!hits.isEmpty());
    QCOMPARE(hits.first().chat, bread);
    QCOMPARE(hits.first().message, -1);  // its title

    hits = chats.search(QStringLiteral("KNEAD dough"));
    QCOMPARE(hits.size(), 1);
    QCOMPARE(hits.first().chat, bread);
    QCOMPARE(hits.first().message, 0);

    hits = chats.search(QStringLiteral("cafe cre"));
    QCOMPARE(hits.size(), 1);
    QCOMPARE(hits.first().chat, cafe);
    QCOMPARE(hits.first().message, 0);

    QVERIFY(chats.search(QStringLiteral("dough pizza")).isEmpty());  // every word, not any
    QVERIFY(chats.search(QStringLiteral("nead")).isEmpty());         // a word's start, not its middle
    QVERIFY(chats.remove(cafe));
    QVERIFY(chats.search(QStringLiteral("latte")).isEmpty());
  }

  // JSON out and back: a chat of its own with the same title, messages and versions; Markdown
  // for reading holds every message. A file that is not an export, is missing or too big is
  // refused with the reason, and no chat is made.
  void aChatGoesToAFileAndComesBack() {
    AppServices services;
    ChatController& chats = services.session().chats();
    ChatRecord r = bakingChat();
    r.messages[3].otherVersions = {{message(QStringLiteral("assistant"), QStringLiteral("At 200 degrees."))}};
    r.messages[3].versionIndex = 1;
    const ChatId id = chats.importChat(r);
    const ChatRecord& saved = chats.chat(id)->record;
    QTemporaryDir dir;
    QString error;
    const QString json = dir.filePath(QStringLiteral("bread.json")), md = dir.filePath(QStringLiteral("bread.md"));
    QVERIFY2(writeChatFile(json, saved, chats.sharedSystemPrompt(), services.session().settings().sampling, &error), qPrintable(error));
    QVERIFY2(writeChatFile(md, saved, chats.sharedSystemPrompt(), services.session().settings().sampling, &error), qPrintable(error));

    std::optional<ChatRecord> back = readChatFile(json, &error);
    QVERIFY2(back, qPrintable(error));
    const ChatId copy = chats.importChat(std::move(*back));
    QVERIFY(copy != id);
    const ChatRecord& imported = chats.chat(copy)->record;
    QCOMPARE(imported.title, saved.title);
    QCOMPARE(contents(imported.messages), contents(saved.messages));
    QCOMPARE(imported.messages[3].versionIndex, 1);
    QCOMPARE(contents(imported.messages[3].otherVersions[0]), contents(saved.messages[3].otherVersions[0]));
    QCOMPARE(imported.parentId, ChatId{-1});

    QFile markdown(md);
    QVERIFY(markdown.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(markdown.readAll());
    QVERIFY(text.startsWith(QStringLiteral("# Bread at home")));
    for (const MessageRecord& m : saved.messages) QVERIFY2(text.contains(m.content), qPrintable(m.content));

    const int numChats = static_cast<int>(chats.chats().size());
    QVERIFY(!readChatFile(dir.filePath(QStringLiteral("gone.json")), &error));
    QVERIFY(!error.isEmpty());
    QFile corrupt(dir.filePath(QStringLiteral("corrupt.json")));
    QVERIFY(corrupt.open(QIODevice::WriteOnly));
    corrupt.write("{\"format\": \"pagedchat.chat\", \"messages\": [");
    corrupt.close();
    error.clear();
    QVERIFY(!readChatFile(corrupt.fileName(), &error));
    QVERIFY(!error.isEmpty());
    QFile huge(dir.filePath(QStringLiteral("huge.json")));
    QVERIFY(huge.open(QIODevice::WriteOnly));
    QVERIFY(huge.resize(kMaxChatImportBytes + 1));  // sparse: nothing is written
    huge.close();
    QVERIFY(!readChatFile(huge.fileName(), &error));
    QVERIFY2(error.contains(QStringLiteral("64 MiB")), qPrintable(error));
    // A folder that does not exist: nothing is written there, and the reason is given.
    error.clear();
    QVERIFY(!writeChatFile(dir.filePath(QStringLiteral("no/such/folder/x.json")), saved, QString(), {}, &error));
    QVERIFY(!error.isEmpty());
    QCOMPARE(static_cast<int>(chats.chats().size()), numChats);
  }

  // Deleting a chat keeps its fork (a chat of its own now) and a duplicate, which is no fork;
  // after a restart the deleted one stays gone and the others come back whole.
  void aDeletedChatsForksStayAcrossARestart() {
    pagedchat::test::useFreshSessionFolder();
    ChatId fork = -1, copy = -1, parent = -1;
    QStringList parentMessages;
    {
      AppServices services;
      ChatController& chats = services.session().chats();
      parent = chats.importChat(bakingChat());
      parentMessages = contents(chats.chat(parent)->record.messages);
      fork = chats.fork(parent, 2);
      QCOMPARE(chats.chat(fork)->record.parentId, parent);
      QCOMPARE(chats.chat(fork)->record.messages.size(), 2);
      copy = chats.duplicate(parent);
      QVERIFY(copy >= 0);
      QCOMPARE(chats.chat(copy)->record.parentId, ChatId{-1});
      QCOMPARE(contents(chats.chat(copy)->record.messages), parentMessages);
      QSignalSpy removed(&chats, &ChatController::chatRemoved);
      QVERIFY(chats.remove(parent));
      QCOMPARE(removed.count(), 1);
      QCOMPARE(removed.first().at(1).value<QVector<ChatId>>(), QVector<ChatId>{fork});  // the orphan
      QVERIFY(!chats.chat(parent));
      QVERIFY(chats.chat(fork));
    }
    AppServices again;
    ChatController& chats = again.session().chats();
    const QVector<ChatId> restored = chats.restore();
    QVERIFY(!restored.contains(parent));
    QVERIFY(restored.contains(fork) && restored.contains(copy));
    QCOMPARE(contents(chats.chat(fork)->record.messages), parentMessages.mid(0, 2));
    QCOMPARE(contents(chats.chat(copy)->record.messages), parentMessages);
  }
};

QTEST_MAIN(TestSessionChats)
#include "test_session_chats.moc"
