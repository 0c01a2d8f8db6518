// Versions of a conversation, through the real window: Regenerate keeps the replies it
// replaces ("3 / 3" after two regenerations), an edited question starts a new version of the
// conversation from it with the old one kept, "<" and ">" show each version's exact text, and
// every version comes back after a restart.

#include <QtTest>

#include <QPlainTextEdit>
#include <QTextBrowser>

#include "support/test_env.h"
#include "support/window_driver.h"
#include "ui/chat/chat_panel.h"
#include "ui/shell/main_window.h"

class TestChatVersions : public QObject {
  Q_OBJECT
  QString m_model;

  static QTextBrowser* transcript(MainWindow& w) { return w.findChild<QTextBrowser*>(QStringLiteral("transcript")); }
  static void click(MainWindow& w, const QString& href) { emit transcript(w)->anchorClicked(QUrl(href)); }
  static void regenerate(MainWindow& w) {
    QSignalSpy done(&w, &MainWindow::turnDone);
    w.chatPanel()->regenerate();
    QVERIFY(done.wait(120000));
  }

 private slots:
  void initTestCase() {
    pagedchat::test::useFreshDataFolder();
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    m_model = QString::fromStdString(model);
  }

  void regenerateKeepsEveryReply() {
    ChatId id = -1;
    QStringList replies;
    {
      AppServices services;
      MainWindow w(services);
      w.show();
      pagedchat::test::loadAndWait(w, m_model);
      AppSettings s = w.settings();
      s.sampling.temperature = 1.2;  // replies that differ
      s.sampling.maxTokens = 16;
      w.applySettings(s);
      id = w.newChat();
      pagedchat::test::sendAndWait(w, QStringLiteral("Invent a name for a dragon."));
      replies << w.chat(id)->messages.last().content;
      for (int k = 0; k < 2; ++k) {
        regenerate(w);
        replies << w.chat(id)->messages.last().content;
      }
      const MessageRecord& last = w.chat(id)->messages.last();
      QCOMPARE(w.chat(id)->messages.size(), 2);
      QCOMPARE(last.numVersions(), 3);
      QCOMPARE(last.versionIndex, 2);
      QVERIFY(transcript(w)->toPlainText().contains(QStringLiteral("< 3 / 3 >")));
      // Back and forth: each version shows its own text, at once.
      click(w, QStringLiteral("version:1:-1"));
      QCOMPARE(w.chat(id)->messages.last().content, replies[1]);
      QVERIFY(transcript(w)->toPlainText().contains(QStringLiteral("< 2 / 3 >")));
      click(w, QStringLiteral("version:1:-1"));
      QCOMPARE(w.chat(id)->messages.last().content, replies[0]);
      click(w, QStringLiteral("version:1:-1"));  // no version before the first
      QCOMPARE(w.chat(id)->messages.last().content, replies[0]);
      click(w, QStringLiteral("version:1:1"));
      click(w, QStringLiteral("version:1:1"));
      QCOMPARE(w.chat(id)->messages.last().content, replies[2]);
      click(w, QStringLiteral("version:1:-1"));  // leave version 2 shown
    }
    // After a restart every version is there, the one shown as it was.
    AppServices services;
    MainWindow w(services);
    w.show();
    pagedchat::test::loadAndWait(w, m_model);
    w.selectChat(id);
    QCOMPARE(w.chat(id)->messages.last().numVersions(), 3);
    QCOMPARE(w.chat(id)->messages.last().content, replies[1]);
    for (int v : {0, 2}) {
      click(w, QStringLiteral("version:1:%1").arg(v - w.chat(id)->messages.last().versionIndex));
      QCOMPARE(w.chat(id)->messages.last().content, replies[v]);
    }
  }

  void anEditedQuestionIsANewVersionFromIt() {
    AppServices services;
    MainWindow w(services);
    w.show();
    pagedchat::test::loadAndWait(w, m_model);
    const ChatId id = w.newChat();
    pagedchat::test::sendAndWait(w, QStringLiteral("Name a river."));
    pagedchat::test::sendAndWait(w, QStringLiteral("Name a mountain."));
    const QVector<MessageRecord> before = w.chat(id)->messages;
    QCOMPARE(before.size(), 4);

    // Edit the second question (message 3): it opens in the input; Send makes the new version.
    click(w, QStringLiteral("edit:2"));
    auto* input = w.findChild<QPlainTextEdit*>(QStringLiteral("input"));
    QCOMPARE(input->toPlainText(), before[2].content);
    pagedchat::test::sendAndWait(w, QStringLiteral("Name a desert."));
    const QVector<MessageRecord> after = w.chat(id)->messages;
    QCOMPARE(after.size(), 4);
    QCOMPARE(after[0].content, before[0].content);  // the conversation before it is the same
    QCOMPARE(after[1].content, before[1].content);
    QCOMPARE(after[2].content, QStringLiteral("Name a desert."));
    QCOMPARE(after[2].numVersions(), 2);
    QVERIFY(!after[3].content.isEmpty());

    click(w, QStringLiteral("version:2:-1"));  // the old version: its question and its reply
    QCOMPARE(w.chat(id)->messages.size(), 4);
    QCOMPARE(w.chat(id)->messages[2].content, before[2].content);
    QCOMPARE(w.chat(id)->messages[3].content, before[3].content);
    click(w, QStringLiteral("version:2:1"));
    QCOMPARE(w.chat(id)->messages[2].content, QStringLiteral("Name a desert."));
    QCOMPARE(w.chat(id)->messages[3].content, after[3].content);
    // The conversation goes on from the version shown.
    pagedchat::test::sendAndWait(w, QStringLiteral("And a lake?"));
    QCOMPARE(w.chat(id)->messages.size(), 6);
    QCOMPARE(w.chat(id)->messages[2].numVersions(), 2);
  }
};

QTEST_MAIN(TestChatVersions)
#include "test_chat_versions.moc"
