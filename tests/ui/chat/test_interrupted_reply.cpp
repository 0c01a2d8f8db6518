// A reply the app dies in (kill -9 mid-reply): what the disk holds then is the database and its
// write-ahead log, copied here while the real window streams a reply. Restored from that copy,
// a reply with text is kept and marked interrupted (said so under it, with Continue, which
// writes more of it), and a reply with no text yet is dropped: a new turn's leaves the
// question, a regenerate's leaves the reply it was replacing. First the rule on its own.

#include <QtTest>

#include <QPlainTextEdit>
#include <QTemporaryDir>
#include <QTextBrowser>

#include <memory>

#include "support/test_env.h"
#include "support/window_driver.h"
#include "appcore/session/chat_controller.h"
#include "appcore/chat/chat_database.h"
#include "ui/chat/chat_panel.h"
#include "ui/shell/main_window.h"

namespace {

MessageRecord message(const QString& role, const QString& content, const QString& finish = {}) {
  MessageRecord m{.role = role, .content = content};
  m.metrics.finishReason = finish;
  return m;
}

QStringList contents(const QVector<MessageRecord>& messages) {
  QStringList out;
  for (const MessageRecord& m : messages) out << m.content;
  return out;
}

// Sends as the user does (Ctrl+Enter), not waiting for the reply.
void typeAndSend(MainWindow& w, const QString& text) {
  auto* input = w.findChild<QPlainTextEdit*>(QStringLiteral("input"));
  input->setPlainText(text);
  QTest::keyClick(input, Qt::Key_Return, Qt::ControlModifier);
}

void greedy(MainWindow& w, int maxTokens) {
  AppSettings s = w.settings();
  s.sampling.maxTokens = maxTokens;
  s.sampling.temperature = 0.0;
  w.applySettings(s);
}

}  // namespace

class TestInterruptedReply : public QObject {
  Q_OBJECT
  QString m_model;
  QTemporaryDir m_crashes;

  // What the disk holds if the app died now: the chats and their write-ahead log, as files.
  QString crashCopy(const QString& name) {
    const QString dir = m_crashes.filePath(name);
    QDir().mkpath(dir);
    const QString copy = dir + QStringLiteral("/chats.sqlite");
    for (const char* suffix : {"", "-wal"})
      if (QFileInfo::exists(ChatDatabase::defaultPath() + QLatin1String(suffix)))
        QFile::copy(ChatDatabase::defaultPath() + QLatin1String(suffix), copy + QLatin1String(suffix));
    return copy;
  }

 private slots:
  void initTestCase() {
    pagedchat::test::useFreshDataFolder();
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    m_model = QString::fromStdString(model);
    QVERIFY(m_crashes.isValid());
  }

  void aReplyWithTextIsKeptMarkedInterrupted() {
    // Saved by an older app with no finish reason, or by this one marked in flight.
    for (const QString& finish : {QString(), ReplyMetrics::kInterrupted}) {
      QVector<MessageRecord> m{message(QStringLiteral("user"), QStringLiteral("q")),
                               message(QStringLiteral("assistant"), QStringLiteral("Par"), finish)};
      QCOMPARE(settleInterruptedReply(m), finish.isEmpty());
      QCOMPARE(contents(m), (QStringList{QStringLiteral("q"), QStringLiteral("Par")}));
      QCOMPARE(m[1].metrics.finishReason, QStringLiteral("interrupted"));
    }
  }

  void aReplyWithNoTextIsDropped() {
    QVector<MessageRecord> m{message(QStringLiteral("user"), QStringLiteral("q")),
                             message(QStringLiteral("assistant"), QString(), ReplyMetrics::kInterrupted)};
    QVERIFY(settleInterruptedReply(m));
    QCOMPARE(contents(m), QStringList{QStringLiteral("q")});
  }

  void aNewVersionWithNoTextGivesWayToTheOneBefore() {
    QVector<MessageRecord> m{message(QStringLiteral("user"), QStringLiteral("q")),
                             message(QStringLiteral("assistant"), QString(), ReplyMetrics::kInterrupted)};
    m[1].otherVersions = {{message(QStringLiteral("assistant"), QStringLiteral("old"), QStringLiteral("stop"))}};
    m[1].versionIndex = 1;
    QVERIFY(settleInterruptedReply(m));
    QCOMPARE(contents(m), (QStringList{QStringLiteral("q"), QStringLiteral("old")}));
    QCOMPARE(m[1].numVersions(), 1);
    QCOMPARE(m[1].versionIndex, 0);
    QCOMPARE(m[1].metrics.finishReason, QStringLiteral("stop"));
  }

  void aReplyThatEndedIsLeftAlone() {
    for (const QString& finish : {QStringLiteral("stop"), QStringLiteral("length"), QStringLiteral("abort")}) {
      QVector<MessageRecord> m{message(QStringLiteral("user"), QStringLiteral("q")),
                               message(QStringLiteral("assistant"), QString(), finish)};
      QVERIFY(!settleInterruptedReply(m));
      QCOMPARE(m.size(), 2);
      QCOMPARE(m[1].metrics.finishReason, finish);
    }
    QVector<MessageRecord> question{message(QStringLiteral("user"), QStringLiteral("q"))};
    QVERIFY(!settleInterruptedReply(question));
    QCOMPARE(question.size(), 1);
  }

  void aReplyCutByACrashIsRestoredInterruptedAndContinued() {
    QString crashed, partial, whole;
    ChatId id = -1;
    {
      AppServices services;
      MainWindow w(services);
      w.show();
      pagedchat::test::loadAndWait(w, m_model);
      greedy(w, 200);
      id = w.newChat();
      // The copy is taken when the first text arrives: the reply in flight is saved with it then.
      auto* chats = w.session().findChild<ChatController*>();
      QVERIFY(chats);
      connect(chats, &ChatController::chatChanged, this, [&](ChatId changed) {
        const ChatRecord* c = w.chat(changed);
        if (changed != id || !partial.isEmpty() || c->messages.size() != 2 || c->messages[1].content.isEmpty()) return;
        partial = c->messages[1].content;
        crashed = crashCopy(QStringLiteral("mid-reply"));
      });
      QSignalSpy done(&w, &MainWindow::turnDone);
      typeAndSend(w, QStringLiteral("Tell me a long story about a dragon and a lighthouse."));
      QVERIFY(done.wait(120000));
      QVERIFY(!partial.isEmpty());
      whole = w.chat(id)->messages[1].content;
    }
    QVERIFY2(whole.startsWith(partial) && whole.size() > partial.size(), qPrintable(partial + QStringLiteral(" | ") + whole));

    AppServices services(crashed);
    MainWindow w(services);
    w.show();
    w.selectChat(id);
    const ChatRecord* c = w.chat(id);
    QCOMPARE(c->messages.size(), 2);
    QCOMPARE(c->messages[1].content, partial);
    QCOMPARE(c->messages[1].metrics.finishReason, QStringLiteral("interrupted"));
    auto* transcript = w.findChild<QTextBrowser*>(QStringLiteral("transcript"));
    QVERIFY2(transcript->toPlainText().endsWith(
                 QStringLiteral("interrupted before it ended (the app closed, or the model was changed) · fork here · copy · continue")),
             qPrintable(transcript->toPlainText()));

    // Continue writes more of the same reply.
    pagedchat::test::loadAndWait(w, m_model);
    greedy(w, 16);
    QSignalSpy done(&w, &MainWindow::turnDone);
    emit transcript->anchorClicked(QUrl(QStringLiteral("continue:1")));
    QVERIFY(done.wait(120000));
    QCOMPARE(c->messages.size(), 2);
    QVERIFY2(c->messages[1].content.startsWith(partial) && c->messages[1].content.size() > partial.size(),
             qPrintable(c->messages[1].content));
    QCOMPARE(c->messages[1].metrics.finishReason, QStringLiteral("length"));
    QCOMPARE(c->messages[1].metrics.numTokens, 16);  // what was measured before went with the app
  }

  void aReplyWithNoTextYetIsDroppedOnRestore() {
    QString newTurn, regenerated, fruit, vegetable;
    ChatId id = -1;
    {
      AppServices services;
      MainWindow w(services);
      w.show();
      pagedchat::test::loadAndWait(w, m_model);
      greedy(w, 8);
      id = w.newChat();
      pagedchat::test::sendAndWait(w, QStringLiteral("Name a fruit."));
      fruit = w.chat(id)->messages[1].content;
      QSignalSpy done(&w, &MainWindow::turnDone);
      typeAndSend(w, QStringLiteral("And a vegetable?"));
      newTurn = crashCopy(QStringLiteral("new-turn"));  // before any text: the engine side has not answered yet
      QVERIFY(done.wait(120000));
      vegetable = w.chat(id)->messages[3].content;
      w.chatPanel()->regenerate();
      regenerated = crashCopy(QStringLiteral("regenerated"));
      QVERIFY(done.wait(120000));
      QCOMPARE(w.chat(id)->messages[3].numVersions(), 2);
    }
    QVERIFY(!fruit.isEmpty() && !vegetable.isEmpty());
    {
      AppServices services(newTurn);
      MainWindow w(services);
      QCOMPARE(contents(w.chat(id)->messages), (QStringList{QStringLiteral("Name a fruit."), fruit, QStringLiteral("And a vegetable?")}));
    }
    for (const ChatRecord& saved : ChatDatabase(newTurn).loadChats())  // settled on disk too
      if (saved.id == id) QCOMPARE(saved.messages.size(), 3);
    {
      AppServices services(regenerated);
      MainWindow w(services);
      const ChatRecord* c = w.chat(id);
      QCOMPARE(contents(c->messages), (QStringList{QStringLiteral("Name a fruit."), fruit, QStringLiteral("And a vegetable?"), vegetable}));
      QCOMPARE(c->messages[3].numVersions(), 1);
      QVERIFY(c->messages[3].metrics.finishReason == QLatin1String("length") ||
              c->messages[3].metrics.finishReason == QLatin1String("stop"));
    }
  }
};

QTEST_MAIN(TestInterruptedReply)
#include "test_interrupted_reply.moc"
