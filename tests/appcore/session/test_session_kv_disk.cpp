// The disk tier in the app (Settings > Disk cache): a chat reopened after a restart reads its
// history's KV blocks from disk for its next turn instead of computing them, its reply's footer
// says how many tokens and how long, and the reply is the one the same turn gets with the disk
// tier off (greedy). Through the session alone (no widget), as the window drives it.

#include <QDir>
#include <QDirIterator>
#include <QSignalSpy>
#include <QtTest>

#include "appcore/session/pool_control.h"
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

// The first pool frame (PoolControl's, chats named) that `holds`, asking the engine thread for
// one every 100 ms when `ask`: the disk strip is rebuilt at most every DiskStrip::kMinRebuildMs,
// so a frame right after a change may still show the strip before it. The last frame when none
// holds (within 10 s).
template <class Holds>
PoolFrame frameWhere(AppServices& services, Holds holds, bool ask = true) {
  PoolFrame last;
  bool held = false;
  const QMetaObject::Connection c = QObject::connect(&services.session().pool(), &PoolControl::localFrame,
                                                     &services.session().pool(), [&](const PoolFrame& f) {
                                                       if (held) return;  // the one that held is kept
                                                       last = f;
                                                       held = holds(f);
                                                     });
  for (int i = 0; i < 100 && !held; ++i) {
    if (ask) onEngineThread(services.session().bridge(), [](EngineBridge& b) { b.sendFrame(); });
    QTest::qWait(100);
  }
  QObject::disconnect(c);
  return last;
}

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

  // The reply's line: what came from disk, how long it took, and about what it saved.
  void theLineSaysWhatTheDiskSaved() {
    ReplyMetrics m;
    QCOMPARE(m.fromDisk(), QString());
    m.numDiskPromptTokens = 8012;
    m.diskReadSeconds = 0.412;
    QCOMPARE(m.fromDisk(), QStringLiteral(" · 8,012 tokens read from disk in 412 ms"));  // no prompt speed known yet
    m.diskPromptSeconds = 183;
    QCOMPARE(m.fromDisk(), QStringLiteral(" · 8,012 tokens read from disk in 412 ms instead of about 3 min of prompt"));
    QCOMPARE(ReplyMetrics::duration(0.0002), QStringLiteral("1 ms"));
    QCOMPARE(ReplyMetrics::duration(3.44), QStringLiteral("3.4 s"));
    QCOMPARE(ReplyMetrics::duration(48.4), QStringLiteral("48 s"));
    QCOMPARE(ReplyMetrics::duration(4335), QStringLiteral("1 h 12 min"));
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
      // Before its next turn the reopened chat's history waits on disk, none of it in the pool:
      // the pool view's third tier lists its blocks, named with the chat's title, in order, in a
      // frame the idle engine sends by itself once the histories come in.
      const PoolFrame before = frameWhere(again, [](const PoolFrame& f) { return f.diskBlocks.size() >= 4; }, false);
      QVERIFY(before.numDiskModelBlocks >= 4);
      QVERIFY(before.diskBlocks.size() >= 4);
      for (size_t i = 0; i < before.diskBlocks.size(); ++i) {
        const PoolFrameDiskBlock& b = before.diskBlocks[i];
        QCOMPARE(b.chats, std::vector<int64_t>{id});
        QCOMPARE(b.titles, QStringList{chats.chat(id)->record.title.isEmpty() ? QStringLiteral("chat %1").arg(id)
                                                                                : chats.chat(id)->record.title});
        QCOMPARE(b.index, static_cast<int32_t>(i));
        QCOMPARE(b.tokens.size(), size_t{16});
        QCOMPARE(b.poolBlock, -1);
      }
      QVERIFY(replyAndWait(again.session(), id, kNext, 16));
      const ReplyMetrics& m = lastReply(chats, id).metrics;
      QVERIFY2(m.numDiskPromptTokens >= 64, qPrintable(m.summary()));
      QCOMPARE(m.numDiskPromptTokens % 16, qint64{0});
      QCOMPARE(m.numCachedPromptTokens, m.numDiskPromptTokens);
      QVERIFY(m.diskReadSeconds > 0);
      QVERIFY2(m.summary().contains(QStringLiteral("tokens read from disk in")), qPrintable(m.summary()));
      // The first run measured its prompt's speed and saved it beside the blocks: the line says
      // what the read saved ("... instead of about 1.2 s of prompt").
      QVERIFY2(m.diskPromptSeconds > 0, qPrintable(m.summary()));
      QVERIFY2(m.summary().contains(QStringLiteral(" instead of about ")) && m.summary().contains(QStringLiteral(" of prompt")),
               qPrintable(m.summary()));
      qInfo("restored: %s", qPrintable(m.summary()));
      // The pool view's disk strip: after the turn the blocks read back are in the pool too.
      const PoolFrame after = frameWhere(again, [](const PoolFrame& f) {
        return !f.diskBlocks.empty() && std::all_of(f.diskBlocks.begin(), f.diskBlocks.end(), [](const auto& b) { return b.poolBlock >= 0; });
      });
      QVERIFY(!after.diskBlocks.empty());
      for (const PoolFrameDiskBlock& b : after.diskBlocks) QVERIFY(b.poolBlock >= 0);
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

  // A deleted chat's blocks leave the disk, but those another chat's history starts with too
  // (the shared system prompt's) stay: the other chat, reopened, reads as much of its history
  // back as when nothing was deleted.
  void aDeletedChatsBlocksLeaveTheDisk() {
    const qint64 kept = readBackAfter(false), afterDelete = readBackAfter(true);
    QVERIFY(kept >= 32);
    QCOMPARE(afterDelete, kept);
  }

 private:
  static int blockFiles() {
    int n = 0;
    QDirIterator it(AppSettings::kvDiskFolder(), {QStringLiteral("*.kvb")}, QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext()) {
      it.next();
      ++n;
    }
    return n;
  }

  // Chats A and B answer; A is deleted (or not); after a restart, B's next turn: the tokens it read from disk.
  qint64 readBackAfter(bool deleteA) {
    QDir(AppSettings::kvDiskFolder()).removeRecursively();
    ChatId b = -1;
    {
      AppServices services;
      useDisk(services, true);
      if (!loadIntoSession(services, m_model)) return -1;
      ChatController& chats = services.session().chats();
      const ChatId a = chats.create();
      if (!replyAndWait(services.session(), a, kFirst, 24)) return -1;
      b = chats.create();
      if (!replyAndWait(services.session(), b, QStringLiteral("Name three birds that live by the sea."), 24)) return -1;
      if (!QTest::qWaitFor([] { return blockFiles() > 0; }, 5000)) return -1;
      const int before = blockFiles();
      if (deleteA && (!chats.remove(a) || !QTest::qWaitFor([&] { return blockFiles() < before; }, 10000))) return -1;
    }
    AppServices again;
    useDisk(again, true);
    ChatController& chats = again.session().chats();
    if (!chats.restore().contains(b) || !loadIntoSession(again, m_model)) return -1;
    if (!replyAndWait(again.session(), b, kNext, 8)) return -1;
    const ReplyMetrics& m = lastReply(chats, b).metrics;
    qInfo("B reopened (%s): %lld prompt tokens, %lld from disk", deleteA ? "A deleted" : "A kept",
          static_cast<long long>(m.numPromptTokens), static_cast<long long>(m.numDiskPromptTokens));
    const qint64 read = m.numDiskPromptTokens;
    QVector<ChatId> ids;  // the next scenario starts with no chat
    for (const auto& [id, c] : chats.chats()) ids.append(id);
    for (ChatId id : ids) chats.remove(id);
    return read;
  }
};

QTEST_GUILESS_MAIN(TestSessionKvDisk)
#include "test_session_kv_disk.moc"
