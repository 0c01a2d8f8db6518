// The disk tier in the app (Settings > Disk cache): a chat reopened after a restart reads its
// history's KV blocks from disk for its next turn instead of computing them, its reply's footer
// says how many tokens and how long, and the reply is the one the same turn gets with the disk
// tier off (greedy). Through the session alone (no widget), as the window drives it.

#include <QDir>
#include <QSignalSpy>
#include <QtTest>

#include "support/session_driver.h"
#include "support/test_env.h"

using pagedchat::test::loadIntoSession;
using pagedchat::test::replyAndWait;

namespace {

const QString kFirst = QStringLiteral(
    "I am planning a week of walking along the coast in late autumn, staying in small villages and carrying "
    "everything myself. What should I pack, how far should I plan to walk each day, and what should I do "
    "when the weather turns?");
const QString kNext = QStringLiteral("And what should I eat on the way?");

// The settings with the disk tier on or off (saved before the load: nothing reloads).
void useDisk(AppServices& services, bool on) {
  AppSettings s = services.session().settings();
  s.kvDisk = on;
  services.session().applySettings(s);
}

const MessageRecord& lastReply(ChatController& chats, ChatId id) { return chats.chat(id)->record.messages.back(); }

}  // namespace

class TestSessionKvDisk : public QObject {
  Q_OBJECT
  QString m_model;

 private slots:
  void initTestCase() {
    pagedchat::test::useFreshSessionFolder();
    QDir(AppSettings::kvDiskFolder()).removeRecursively();
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    m_model = QString::fromStdString(model);
  }

  void theDiskTierIsOffUnderTestModeAndOnForUsers() {
    QVERIFY(!AppSettings().kvDisk);  // test mode: suites must not read each other's blocks
    QVERIFY(AppSettings::kvDiskFolder().endsWith(QLatin1String("kv-blocks")));
  }

  void aReopenedChatReadsItsHistoryFromDisk() {
    ChatId id = -1;
    {
      AppServices services;
      useDisk(services, true);
      QVERIFY(loadIntoSession(services, m_model));
      ChatController& chats = services.session().chats();
      id = chats.create();
      QVERIFY(replyAndWait(services.session(), id, kFirst, 16));
      QCOMPARE(lastReply(chats, id).metrics.numDiskPromptTokens, qint64{0});
    }  // the app quits: its blocks are on disk
    QString withDisk;
    {
      AppServices again;
      useDisk(again, true);
      ChatController& chats = again.session().chats();
      QVERIFY(chats.restore().contains(id));
      QVERIFY(loadIntoSession(again, m_model));
      QVERIFY(replyAndWait(again.session(), id, kNext, 16));
      const ReplyMetrics& m = lastReply(chats, id).metrics;
      QVERIFY2(m.numDiskPromptTokens >= 64, qPrintable(m.summary()));
      QCOMPARE(m.numDiskPromptTokens % 16, qint64{0});
      QCOMPARE(m.numCachedPromptTokens, m.numDiskPromptTokens);
      QVERIFY(m.diskReadSeconds > 0);
      QVERIFY2(m.summary().contains(QStringLiteral("tokens read from disk in")), qPrintable(m.summary()));
      qInfo("restored: %s", qPrintable(m.summary()));
      withDisk = lastReply(chats, id).content;
      QVERIFY(!withDisk.isEmpty());
    }
    // The oracle: the same reply regenerated after another restart with the disk tier off, its
    // whole history computed from the same tokens.
    AppServices off;
    useDisk(off, false);
    ChatController& chats = off.session().chats();
    QVERIFY(chats.restore().contains(id));
    QVERIFY(loadIntoSession(off, m_model));
    TurnSettings greedy = off.session().settings().sampling;
    greedy.temperature = 0;
    greedy.maxTokens = 16;
    QSignalSpy ended(&chats, &ChatController::turnEnded);
    QVERIFY(chats.regenerate(id, greedy, {}));
    QVERIFY(QTest::qWaitFor([&] { return !ended.isEmpty(); }, 120000));
    const ReplyMetrics& m = lastReply(chats, id).metrics;
    QCOMPARE(m.numDiskPromptTokens, qint64{0});
    QCOMPARE(m.numCachedPromptTokens, qint64{0});
    QCOMPARE(lastReply(chats, id).content, withDisk);
  }
};

QTEST_GUILESS_MAIN(TestSessionKvDisk)
#include "test_session_kv_disk.moc"
