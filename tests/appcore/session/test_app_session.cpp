// The app's session without a window (no widget is linked): chats reply, fork and share their
// blocks; the pool control pauses this machine's engine and steps it one step at a time; a
// lesson sets its scene up and reaches its key event through the session alone, its fresh
// engine loaded by the session's model load. What MainWindow's suites reach through the window, here
// reached as the window reaches it.

#include <QSignalSpy>
#include <QtTest>

#include <algorithm>

#include "appcore/lessons/lesson_runner.h"
#include "appcore/session/pool_control.h"
#include "support/session_driver.h"
#include "support/test_env.h"

using pagedchat::BlockState;
using pagedchat::KvEventKind;
using pagedchat::test::loadIntoSession;
using pagedchat::test::replyAndWait;

namespace {
int maxRefCount(const PoolFrame& f) {
  int most = 0;
  for (const pagedchat::KvBlockInfo& b : f.snapshot.blocks) most = std::max(most, static_cast<int>(b.owners.size()));
  return most;
}
}  // namespace

class TestAppSession : public QObject {
  Q_OBJECT
  QString m_model;

 private slots:
  void initTestCase() {
    pagedchat::test::useFreshSessionFolder();
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    m_model = QString::fromStdString(model);
  }

  void aChatRepliesForksAndSharesItsBlocks() {
    AppServices services;
    AppSession& session = services.session();
    QSignalSpy ready(&session, &AppSession::modelReady);
    QVERIFY(loadIntoSession(services, m_model));
    QCOMPARE(ready.count(), 1);
    QVERIFY(session.hasModel());
    QVERIFY(session.contextLength() > 0);
    QCOMPARE(session.modelInfo().path, m_model);

    ChatController& chats = session.chats();
    const ChatId a = chats.create();
    QVERIFY(replyAndWait(session, a, QStringLiteral("What is 2+2?")));
    const ChatRecord& ra = chats.chat(a)->record;
    QCOMPARE(ra.messages.size(), 2);
    QCOMPARE(ra.messages[0].content, QStringLiteral("What is 2+2?"));
    QVERIFY(!ra.messages[1].content.isEmpty());
    QVERIFY(!chats.chat(a)->replying);
    const int heldByA = chats.chat(a)->contextUsed;
    QVERIFY(heldByA > 0);

    // A fork at the reply holds A's messages and starts from A's parked sequence: after its
    // own turn, A's blocks are held by both (ref count 2), not computed again.
    QSignalSpy frames(&session.pool(), &PoolControl::localFrame);
    const ChatId b = chats.fork(a, 2);
    QVERIFY(b != a && b >= 0);
    QCOMPARE(chats.chat(b)->record.parentId, a);
    QVERIFY(replyAndWait(session, b, QStringLiteral("And 3+3?")));
    const ChatRecord& rb = chats.chat(b)->record;
    QCOMPARE(rb.messages.size(), 4);
    QCOMPARE(rb.messages[0].content, ra.messages[0].content);
    QCOMPARE(rb.messages[1].content, ra.messages[1].content);
    QVERIFY(chats.chat(b)->contextUsed > heldByA);
    QTRY_VERIFY_WITH_TIMEOUT(!frames.isEmpty() && maxRefCount(frames.last().at(0).value<PoolFrame>()) == 2, 10000);

    // The engine side labels each sequence with its chat's id; the session names it with the
    // chat's title as it is now (one owner of the title: the controller).
    QVERIFY(chats.rename(a, QStringLiteral("Renamed A")));
    frames.clear();
    session.pool().watchPool(QString());  // this machine's pool, drawn again now
    QTRY_VERIFY_WITH_TIMEOUT(!frames.isEmpty(), 10000);
    const PoolFrame now = frames.last().at(0).value<PoolFrame>();
    QSet<ChatId> named;
    for (const PoolFrameSequence& s : now.sequences) {
      if (s.chat < 0) continue;
      named.insert(s.chat);
      QCOMPARE(s.chatTitle, chats.chat(s.chat)->record.title);
      QCOMPARE(s.colorIndex, static_cast<int>(s.chat % 1000));
    }
    QCOMPARE(named, (QSet<ChatId>{a, b}));
    QCOMPARE(chats.chat(a)->record.title, QStringLiteral("Renamed A"));
  }

  void thePoolControlPausesAndStepsThisMachine() {
    AppServices services;
    AppSession& session = services.session();
    QVERIFY(loadIntoSession(services, m_model));
    PoolControl& pool = session.pool();
    QVERIFY(pool.watchedPool().isEmpty());
    QSignalSpy paused(&pool, &PoolControl::pausedChanged);
    pool.setPaused(true);
    pool.setPaused(true);  // said once
    QCOMPARE(paused.count(), 1);
    QVERIFY(pool.paused());

    ChatController& chats = session.chats();
    const ChatId id = chats.create();
    QSignalSpy ended(&chats, &ChatController::turnEnded);
    TurnSettings turn = session.settings().sampling;
    turn.temperature = 0;
    turn.maxTokens = 8;
    QVERIFY(chats.send(id, QStringLiteral("Name a colour."), turn, {}));
    QTest::qWait(300);
    QVERIFY(chats.chat(id)->replying);  // paused: nothing ran
    QVERIFY(ended.isEmpty());

    // Each Step is one engine step: the frames' step indices go up by one.
    QSignalSpy frames(&pool, &PoolControl::localFrame);
    int64_t last = -1;
    for (int i = 0; i < 3; ++i) {
      const int before = frames.count();
      pool.step();
      QTRY_VERIFY_WITH_TIMEOUT(frames.count() > before, 10000);
      const int64_t index = frames.last().at(0).value<PoolFrame>().stepIndex;
      if (last >= 0) QCOMPARE(index, last + 1);
      last = index;
    }
    QVERIFY(ended.isEmpty());
    pool.setPaused(false);
    QCOMPARE(paused.count(), 2);
    QVERIFY(ended.wait(60000));
    QVERIFY(!chats.chat(id)->record.messages.last().content.isEmpty());
  }

  void aLessonIsToldThroughTheSessionAlone() {
    AppServices services;
    AppSession& session = services.session();
    QVERIFY(loadIntoSession(services, m_model));
    LessonRunner runner(session);  // its fresh engine comes through the session's model load
    QSignalSpy loads(&session.modelLoad(), &ModelLoad::started);
    QSignalSpy shown(&runner, &LessonRunner::chatShown);
    QSignalSpy scene(&runner, &LessonRunner::sceneShown);
    runner.start(QStringLiteral("fork"));
    QTRY_VERIFY_WITH_TIMEOUT(runner.state() == LessonRunner::State::ready || runner.state() == LessonRunner::State::failed, 120000);
    QCOMPARE(runner.state(), LessonRunner::State::ready);
    QVERIFY(session.settings().teachingPreset);
    QCOMPARE(loads.count(), 1);
    QCOMPARE(loads.first().at(0).toString(), m_model);
    QVERIFY(session.pool().paused());
    QCOMPARE(scene.count(), 1);
    QCOMPARE(scene.first(), (QVariantList{static_cast<int>(LessonInfo::History::events), false}));
    const ChatId a = runner.sceneChat(QStringLiteral("Chat A")), b = runner.sceneChat(QStringLiteral("Chat B"));
    QVERIFY(a >= 0 && b >= 0);
    QCOMPARE(session.chats().chat(b)->record.parentId, a);
    QCOMPARE(shown.last().at(0).value<ChatId>(), b);  // the fork is the chat to show
    for (int press = 0; press < 300 && runner.state() != LessonRunner::State::reached; ++press) {
      const QString before = runner.lastSentence();
      session.pool().stepToNextEvent();
      (void)QTest::qWaitFor([&] { return runner.lastSentence() != before || runner.state() == LessonRunner::State::reached; }, 5000);
    }
    QCOMPARE(runner.state(), LessonRunner::State::reached);
    QCOMPARE(runner.eventCount(KvEventKind::copy_on_write), 1);
    QVERIFY2(runner.lastSentence().contains(QStringLiteral("Chat B writes into shared block #")), qPrintable(runner.lastSentence()));
    // Run to end: the fork's reply ends and the lesson is finished.
    session.pool().setPaused(false);
    QTRY_COMPARE_WITH_TIMEOUT(runner.state(), LessonRunner::State::finished, 60000);
  }
};

QTEST_GUILESS_MAIN(TestAppSession)
#include "test_app_session.moc"
