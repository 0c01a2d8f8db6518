// The lessons told on a teacher's server, as a class watches it: pagedchat-server on loopback
// (--allow-pool-control), the window watching its pool (View > Watch a remote pool). Start
// resets the server's pool to the lesson's shape and sets the scene up there with the lesson's
// chats running on the server, paused; Next event steps the server until the key event, which
// the window reads from the server's own frames, its chats named as in the chat list. A lesson
// a server's frames cannot tell (a fork, the context slab, the step records) goes back to this
// machine and says why; a server that lets no client reset its pool is said to, nothing else.

#include <QtTest>

#include <QAction>
#include <QListWidget>
#include <QPushButton>
#include <QUrl>

#include "support/remote_window_scene.h"
#include "support/test_env.h"
#include "support/window_driver.h"
#include "appcore/lessons/lesson_runner.h"
#include "ui/lessons/lessons_panel.h"
#include "appcore/remote/remote_pool_watcher.h"
#include "appcore/session/pool_control.h"
#include "ui/chat_list/chat_list_widget.h"
#include "ui/shell/main_window.h"

using pagedchat::KvEventKind;
using pagedchat::test::RemoteScene;

class TestRemoteLessons : public QObject {
  Q_OBJECT
  QString m_model;

  static void start(MainWindow& w, const QString& id) {
    auto* panel = w.findChild<LessonsPanel*>(QStringLiteral("lessonsPanel"));
    auto* list = panel->findChild<QListWidget*>(QStringLiteral("lessonList"));
    for (int i = 0; i < list->count(); ++i)
      if (list->item(i)->data(Qt::UserRole).toString() == id) list->setCurrentRow(i);
    panel->findChild<QPushButton*>(QStringLiteral("startLesson"))->click();
  }

  // Starts lesson id and presses Next event until its key event (at most 300 presses).
  static void reachKeyEvent(MainWindow& w, const QString& id) {
    LessonRunner* runner = w.lessons();
    start(w, id);
    QTRY_VERIFY_WITH_TIMEOUT(runner->state() == LessonRunner::State::ready || runner->state() == LessonRunner::State::failed, 180000);
    QVERIFY2(runner->state() == LessonRunner::State::ready,
             qPrintable(w.findChild<LessonsPanel*>(QStringLiteral("lessonsPanel"))->statusShown()));  // why it failed
    if (runner->onRemotePool()) {  // the panel says whose pool the lesson is told on
      const QString title = w.findChild<LessonsPanel*>(QStringLiteral("lessonsPanel"))->statusShown();
      QVERIFY2(title.endsWith(QStringLiteral("(on %1's pool)").arg(QUrl(w.session().pool().watchedPool()).authority())), qPrintable(title));
    }
    auto* next = w.findChild<QPushButton*>(QStringLiteral("lessonNextEvent"));
    int silent = 0;  // presses in a row that told nothing: a stuck lesson fails here, saying where
    for (int press = 0; press < 300 && runner->state() != LessonRunner::State::reached; ++press) {
      const QString before = runner->lastSentence();
      next->click();
      const bool told = QTest::qWaitFor([&] { return runner->lastSentence() != before || runner->state() == LessonRunner::State::reached; }, 5000);
      silent = told ? 0 : silent + 1;
      QVERIFY2(silent < 6, qPrintable(QStringLiteral("%1: press %2 told nothing for 30 s; state %3, Next %4, last: %5")
                                          .arg(id).arg(press).arg(static_cast<int>(runner->state()))
                                          .arg(next->isEnabled() ? QStringLiteral("on") : QStringLiteral("off"), before)));
    }
    QCOMPARE(runner->state(), LessonRunner::State::reached);
  }

  // The server's pool now, from its own snapshot route (an empty frame when it does not answer).
  static PoolFrame serverSnapshot(const std::string& url) {
    std::string json;
    PoolFrame f;
    if (pagedchat::remote::pool_snapshot({url, {}}, &json).ok()) RemotePoolWatcher::frameFromJson(QByteArray::fromStdString(json), &f);
    return f;
  }
  static PoolFrame serverSnapshot(const RemoteScene& scene) { return serverSnapshot(scene.server.url); }

 private slots:
  void initTestCase() {
    pagedchat::test::useFreshDataFolder();
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    PC_REQUIRE_ENV(server, "PAGEDCHAT_SERVER");
    m_model = QString::fromStdString(model);
  }

  // Six lessons one after the other on one server, each from a fresh pool of its own shape.
  void theLessonsAreToldOnTheWatchedServersPool() {
    RemoteScene scene(m_model, {"--allow-pool-control"});
    QVERIFY(scene.ready());
    MainWindow& w = scene.w;
    w.session().pool().watchPool(scene.server.qurl());
    LessonRunner* runner = w.lessons();
    PoolFrame drawn;
    connect(&w.session().pool(), &PoolControl::remoteFrame, this, [&](const PoolFrame& f) { drawn = f; });

    reachKeyEvent(w, QStringLiteral("allocation"));
    QVERIFY(runner->onRemotePool());
    QCOMPARE(w.session().pool().watchedPool(), scene.server.qurl());  // still the server's pool in the view
    QVERIFY2(runner->lastSentence().contains(QStringLiteral("Chat A gets block")), qPrintable(runner->lastSentence()));
    QCOMPARE(drawn.snapshot.block_size, AppSettings::kTeachingBlockSize);
    QCOMPARE(static_cast<int>(drawn.snapshot.blocks.size()), AppSettings::kTeachingBlocks);
    const ChatId a = runner->sceneChat(QStringLiteral("Chat A"));
    QCOMPARE(w.chat(a)->remote.url, scene.server.qurl());  // the scene's chat runs on the server
    // The server's own pool has the lesson's shape: the view drew the server's frames, not ours.
    const PoolFrame own = serverSnapshot(scene);
    QCOMPARE(own.snapshot.block_size, AppSettings::kTeachingBlockSize);
    QCOMPARE(static_cast<int>(own.snapshot.blocks.size()), AppSettings::kTeachingBlocks);
    pagedchat::test::runLessonToEnd(w);
    QTRY_COMPARE(runner->state(), LessonRunner::State::finished);  // nothing left to step: said, the buttons off
    QVERIFY(!w.findChild<QPushButton*>(QStringLiteral("lessonNextEvent"))->isEnabled());
    QCOMPARE(w.chat(a)->messages.size(), 2);
    QVERIFY(!w.chat(a)->messages[1].content.isEmpty());

    reachKeyEvent(w, QStringLiteral("prefix"));
    QVERIFY(runner->eventCount(KvEventKind::cache_hit) >= 2);  // the shared system prompt's full blocks
    QVERIFY2(runner->lastSentence().contains(QStringLiteral("Chat B's prompt finds blocks")), qPrintable(runner->lastSentence()));
    pagedchat::test::runLessonToEnd(w);

    reachKeyEvent(w, QStringLiteral("parallel"));
    QVERIFY(runner->eventCount(KvEventKind::share) >= 2);  // the two other samples share the prompt's blocks
    pagedchat::test::runLessonToEnd(w);

    reachKeyEvent(w, QStringLiteral("eviction"));
    QCOMPARE(static_cast<int>(drawn.snapshot.blocks.size()), 48);
    QVERIFY(runner->eventCount(KvEventKind::evict) >= 1);
    pagedchat::test::runLessonToEnd(w);

    reachKeyEvent(w, QStringLiteral("recompute"));
    QCOMPARE(runner->eventCount(KvEventKind::preempt), 1);
    QCOMPARE(runner->eventCount(KvEventKind::swap_out), 0);
    pagedchat::test::runLessonToEnd(w);

    reachKeyEvent(w, QStringLiteral("swap"));
    QVERIFY(runner->eventCount(KvEventKind::swap_out) >= 1);
    QCOMPARE(runner->eventCount(KvEventKind::preempt), 0);
    QCOMPARE(static_cast<int>(drawn.snapshot.host_blocks.size()), 64);
    pagedchat::test::runLessonToEnd(w);
    QVERIFY(w.chat(runner->sceneChat(QStringLiteral("Chat B")))->messages.size() == 2);
  }

  // The fork lesson cannot be told by a server's frames: it goes back to this machine's pool
  // (a model loaded here) and its first sentence says why.
  void aLessonTheServerCannotTellIsToldHere() {
    RemoteScene scene(m_model, {"--allow-pool-control"});
    QVERIFY(scene.ready());
    MainWindow& w = scene.w;
    pagedchat::test::loadAndWait(w, m_model);
    w.session().pool().watchPool(scene.server.qurl());
    start(w, QStringLiteral("fork"));
    LessonRunner* runner = w.lessons();
    QTRY_VERIFY_WITH_TIMEOUT(runner->state() == LessonRunner::State::ready || runner->state() == LessonRunner::State::failed, 180000);
    QCOMPARE(runner->state(), LessonRunner::State::ready);
    QVERIFY(!runner->onRemotePool());
    QVERIFY(w.session().pool().watchedPool().isEmpty());
    auto* panel = w.findChild<LessonsPanel*>(QStringLiteral("lessonsPanel"));
    QVERIFY2(panel->sentenceShown().startsWith(QStringLiteral("(Told on this machine's pool: on a remote server a fork is a new request")),
             qPrintable(panel->sentenceShown()));
    QVERIFY(!w.chat(runner->sceneChat(QStringLiteral("Chat A")))->remote.isSet());
    pagedchat::test::runLessonToEnd(w);
  }

  // The view leaving the server mid-lesson leaves the server as the window found it: unpaused,
  // the lesson's chat running to its end there, then the server's own pool back; the lesson
  // says it has ended. The toolbar starts unpaused on this machine's pool.
  void leavingTheServersPoolGivesItBack() {
    RemoteScene scene(m_model, {"--allow-pool-control"});
    QVERIFY(scene.ready());
    MainWindow& w = scene.w;
    const PoolFrame own = serverSnapshot(scene);
    QVERIFY(own.snapshot.block_size != AppSettings::kTeachingBlockSize);
    w.session().pool().watchPool(scene.server.qurl());
    reachKeyEvent(w, QStringLiteral("allocation"));
    LessonRunner* runner = w.lessons();
    const ChatId a = runner->sceneChat(QStringLiteral("Chat A"));
    QVERIFY(w.isReplying(a));  // paused on the server, its reply under way
    auto* pause = w.findChild<QAction*>(QStringLiteral("pauseEngine"));
    QVERIFY(pause->isChecked());

    w.session().pool().watchPool(QString());
    QVERIFY(!pause->isChecked());
    QCOMPARE(runner->state(), LessonRunner::State::idle);
    QVERIFY(!runner->onRemotePool());
    auto* panel = w.findChild<LessonsPanel*>(QStringLiteral("lessonsPanel"));
    QVERIFY2(panel->statusShown().startsWith(QStringLiteral("The view left the server's pool")), qPrintable(panel->statusShown()));
    QTRY_VERIFY_WITH_TIMEOUT(!w.isReplying(a), 60000);  // resumed: the reply ends there
    QCOMPARE(w.chat(a)->messages.size(), 2);
    QVERIFY(!w.chat(a)->messages[1].content.isEmpty());
    QTRY_VERIFY_WITH_TIMEOUT(serverSnapshot(scene).snapshot.block_size == own.snapshot.block_size, 10000);
    QCOMPARE(serverSnapshot(scene).snapshot.blocks.size(), own.snapshot.blocks.size());
  }

  // Going back to one's own chat mid-lesson ends the lesson on the server too: its chats gone,
  // the server unpaused and its own pool back.
  void backToOnesOwnChatGivesTheServerBack() {
    RemoteScene scene(m_model, {"--allow-pool-control"});
    QVERIFY(scene.ready());
    MainWindow& w = scene.w;
    const PoolFrame own = serverSnapshot(scene);
    const ChatId mine = w.currentChat();
    w.session().pool().watchPool(scene.server.qurl());
    reachKeyEvent(w, QStringLiteral("allocation"));
    LessonRunner* runner = w.lessons();
    const ChatId a = runner->sceneChat(QStringLiteral("Chat A"));
    QVERIFY(w.chat(a));
    auto* list = w.findChild<ChatListWidget*>(QStringLiteral("chatList"));
    list->setCurrentItem(list->item(mine));
    QTRY_COMPARE(runner->state(), LessonRunner::State::idle);
    QCOMPARE(w.currentChat(), mine);
    QCOMPARE(list->currentItem(), list->item(mine));
    QVERIFY(!w.chat(a));
    QVERIFY(!w.findChild<QAction*>(QStringLiteral("pauseEngine"))->isChecked());
    QTRY_VERIFY_WITH_TIMEOUT(serverSnapshot(scene).snapshot.block_size == own.snapshot.block_size, 20000);
    QCOMPARE(serverSnapshot(scene).snapshot.blocks.size(), own.snapshot.blocks.size());
  }

  // A window closed mid-lesson does the same on its way out: the server, paused and in the
  // lesson's pool, is resumed and gets its own pool back.
  void aWindowClosedMidLessonGivesTheServerBack() {
    pagedchat::test::AppNamedServer server(m_model, {"--allow-pool-control"});
    QVERIFY(!server.url.empty());
    const PoolFrame own = serverSnapshot(server.url);
    QVERIFY(own.snapshot.block_size > 0);
    {
      AppServices services;
      MainWindow w(services);
      w.show();
      QVERIFY(pagedchat::test::addThroughTheDialog(w, server.qurl(), QString()));
      w.session().pool().watchPool(server.qurl());
      reachKeyEvent(w, QStringLiteral("allocation"));
    }
    QTRY_VERIFY_WITH_TIMEOUT(serverSnapshot(server.url).snapshot.block_size == own.snapshot.block_size, 10000);
    QCOMPARE(serverSnapshot(server.url).snapshot.blocks.size(), own.snapshot.blocks.size());
    // Not paused: a request runs to its end.
    const pagedchat::remote::RemoteChatResult r = pagedchat::remote::stream_chat({server.url, {}}, pagedchat::test::ask("Say hi.", 4));
    QVERIFY2(r.error.ok(), r.error.sentence().c_str());
  }

  // Without --allow-pool-control the lesson fails with a sentence saying what the server needs.
  void aServerThatIsNotSteppedSaysHowToAllowIt() {
    RemoteScene scene(m_model);
    QVERIFY(scene.ready());
    MainWindow& w = scene.w;
    w.session().pool().watchPool(scene.server.qurl());
    start(w, QStringLiteral("allocation"));
    LessonRunner* runner = w.lessons();
    QTRY_VERIFY_WITH_TIMEOUT(runner->state() == LessonRunner::State::failed, 60000);
    auto* panel = w.findChild<LessonsPanel*>(QStringLiteral("lessonsPanel"));
    QVERIFY2(panel->statusShown().contains(QStringLiteral("--allow-pool-control")), qPrintable(panel->statusShown()));
    QVERIFY(w.chatIds().isEmpty() || !w.isReplying(w.chatIds().first()));
    QCOMPARE(w.session().pool().watchedPool(), scene.server.qurl());  // the server's pool stays in view
  }
};

QTEST_MAIN(TestRemoteLessons)
#include "test_remote_lessons.moc"
