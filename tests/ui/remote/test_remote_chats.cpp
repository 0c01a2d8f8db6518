// Chats on a remote engine as a user runs them, against our own pagedchat-server on loopback
// (started here) and with no local model loaded: File > Remote engines adds the server (its
// models listed; a key kept in a 0600 file and nowhere in the chat database; a missing key
// explained); Chat > Run this chat on picks its model; a greedy reply streams and equals the
// local engine's for the same prompt, with its figures; Stop ends it with its text kept; three
// samples compare side by side and one is picked; a fork runs on the same server; a server
// killed midway is a sentence in that chat, the chat and the other chats intact.

#include <QtTest>

#include <atomic>
#include <thread>

#include <QDockWidget>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QMenu>
#include <QPlainTextEdit>
#include <QSpinBox>
#include <QTreeWidgetItem>
#include <QUrl>

#include "support/remote_test_servers.h"
#include "support/remote_window_scene.h"
#include "support/test_env.h"
#include "support/window_driver.h"
#include "ui/chat/compare_view.h"
#include "ui/chat/transcript_view.h"
#include "appcore/session/chat_controller.h"
#include "ui/chat_list/chat_list_widget.h"
#include "appcore/pool/kv_pool_numbers.h"
#include "appcore/remote/remote_bridge.h"
#include "appcore/remote/remote_endpoints.h"
#include "ui/remote/remote_engines_dialog.h"
#include "appcore/remote/remote_pool_watcher.h"
#include "appcore/session/pool_control.h"
#include "ui/chat/chat_panel.h"
#include "ui/shell/main_window.h"

namespace {
using pagedchat::test::addThroughTheDialog;
using pagedchat::test::RemoteScene;
using Scene = RemoteScene;
using Server = pagedchat::test::AppNamedServer;

TurnSettings greedy(int maxTokens) {
  TurnSettings s;
  s.temperature = 0;
  s.maxTokens = maxTokens;
  return s;
}

QString transcriptText(MainWindow& w) { return w.findChild<TranscriptView*>(QStringLiteral("transcript"))->toPlainText(); }
}  // namespace

class TestRemoteChats : public QObject {
  Q_OBJECT
  QString m_model;

 private slots:
  void initTestCase() {
    pagedchat::test::useFreshDataFolder();
    QFile::remove(RemoteEndpoints::keysPath());
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    PC_REQUIRE_ENV(server, "PAGEDCHAT_SERVER");
    PC_REQUIRE_ENV(cli, "PAGEDCHAT_CLI");
    m_model = QString::fromStdString(model);
  }

  void aChatRunsOnARemoteServerAsOnThisMachine() {
    Server server(m_model);
    QVERIFY(!server.url.empty());
    AppServices services;
    MainWindow w(services);
    w.show();  // no local model: a remote chat needs none
    QVERIFY(addThroughTheDialog(w, server.qurl(), QString()));
    QCOMPARE(w.remoteEndpoints()->entries().size(), 1);
    QCOMPARE(w.remoteEndpoints()->entries()[0].models, QStringList{"SmolLM2-135M-Instruct.Q4_1"});

    const ChatId id = w.newChat();
    const ChatId other = w.newChat();  // another remote chat, left alone
    w.selectChat(id);
    // As a user picks it: Chat > Run this chat on > the server's model.
    auto* runOn = w.findChild<QMenu*>(QStringLiteral("runOnMenu"));
    emit runOn->aboutToShow();
    QAction* remoteModel = nullptr;
    for (QAction* a : runOn->actions())
      if (a->text() == QLatin1String("SmolLM2-135M-Instruct.Q4_1")) remoteModel = a;
    QVERIFY(remoteModel);
    remoteModel->trigger();
    QCOMPARE(w.chat(id)->remote, (RemoteEngineChoice{server.qurl(), "SmolLM2-135M-Instruct.Q4_1"}));
    // The list says where the chat runs, under its title.
    const QString listed = w.findChild<ChatListWidget*>(QStringLiteral("chatList"))->item(id)->text(0);
    QVERIFY2(listed.contains(QStringLiteral("on ") + QUrl(server.qurl()).authority()), qPrintable(listed));
    QVERIFY2(w.findChild<QLabel*>(QStringLiteral("contextUsed"))->text().contains(server.qurl()),
             qPrintable(w.findChild<QLabel*>(QStringLiteral("contextUsed"))->text()));
    QVERIFY(w.findChild<QPlainTextEdit*>(QStringLiteral("input"))->isEnabled());
    w.setChatSampling(id, greedy(40));

    // The greedy reply is the local engine's for the same prompt.
    const QString prompt = QStringLiteral("Name three rivers of Europe.");
    QProcess local;
    local.start(qEnvironmentVariable("PAGEDCHAT_CLI"), {"generate", "--model", m_model, "--prompt", prompt, "--max-tokens", "40"});
    QVERIFY(local.waitForFinished(120000));
    const QString localText = QString::fromUtf8(local.readAllStandardOutput()).chopped(1);
    pagedchat::test::sendAndWait(w, prompt);
    const ChatRecord* c = w.chat(id);
    QCOMPARE(c->messages.size(), 2);
    QCOMPARE(c->messages[1].content, localText);
    QCOMPARE(c->messages[1].metrics.numTokens, 40);
    QCOMPARE(c->messages[1].metrics.finishReason, QStringLiteral("length"));
    QVERIFY(c->messages[1].metrics.secondsToFirstToken > 0 && c->messages[1].metrics.tokensPerSecond > 0);
    QVERIFY(c->messages[1].metrics.numPromptTokens > 0);

    // Stop: the reply ends where it was, its text kept.
    w.setChatSampling(id, greedy(400));
    QSignalSpy done(&w, &MainWindow::turnDone);
    auto* input = w.findChild<QPlainTextEdit*>(QStringLiteral("input"));
    input->setPlainText(QStringLiteral("Tell me a long story about a dragon who learns to bake bread."));
    QTest::keyClick(input, Qt::Key_Return, Qt::ControlModifier);
    QTRY_VERIFY_WITH_TIMEOUT(w.chat(id)->messages.size() == 4 && w.chat(id)->messages[3].content.size() > 20, 60000);
    w.chatPanel()->stop();
    QVERIFY(done.wait(30000));
    QCOMPARE(w.chat(id)->messages[3].metrics.finishReason, QStringLiteral("abort"));
    QVERIFY(w.chat(id)->messages[3].metrics.numTokens < 400);

    // Three samples side by side; the picked one continues the chat. Seeded: the picked sample is
    // the rest of the test's conversation, and with a random one the model now and then ended the
    // "long story" below after 11 tokens, before the server could be killed in the middle of it.
    TurnSettings seeded;
    seeded.seed = 1;
    w.setChatSampling(id, seeded);
    w.findChild<QSpinBox*>(QStringLiteral("samples"))->setValue(3);
    pagedchat::test::sendAndWait(w, QStringLiteral("Give a name for a friendly robot."));
    auto* compare = w.findChild<CompareView*>(QStringLiteral("compareView"));
    QVERIFY(compare->isVisible());
    QCOMPARE(compare->numColumns(), 3);
    for (int i = 0; i < 3; ++i) QVERIFY2(!compare->text(i).isEmpty(), qPrintable(QString::number(i)));
    const QString second = compare->text(1);
    w.chatPanel()->pickSample(1);
    QCOMPARE(w.chat(id)->messages.last().content, second);
    w.findChild<QSpinBox*>(QStringLiteral("samples"))->setValue(1);

    // A fork runs on the same server: its first turn sends its conversation again.
    const ChatId fork = w.forkChat(id, 2);
    QCOMPARE(w.chat(fork)->remote, w.chat(id)->remote);
    w.setChatSampling(fork, greedy(8));
    pagedchat::test::sendAndWait(w, QStringLiteral("And in Spanish?"));
    QCOMPARE(w.chat(fork)->messages.size(), 4);
    QVERIFY(!w.chat(fork)->messages[3].content.isEmpty());

    // The server killed midway: a sentence in that chat; its earlier messages and the other chat intact.
    w.selectChat(id);
    w.setChatSampling(id, greedy(400));
    const int before = static_cast<int>(w.chat(id)->messages.size());
    input->setPlainText(QStringLiteral("Tell me another long story, about a lighthouse keeper."));
    QTest::keyClick(input, Qt::Key_Return, Qt::ControlModifier);
    QTRY_VERIFY_WITH_TIMEOUT(w.chat(id)->messages.size() == before + 2 && w.chat(id)->messages.last().content.size() > 10, 60000);
    QVERIFY2(w.isReplying(id), "the reply must still be coming when the server goes");
    server.process.kill();
    QTRY_VERIFY_WITH_TIMEOUT(!w.isReplying(id), 30000);
    QTRY_VERIFY(server.process.state() == QProcess::NotRunning);  // gone, not dying: the next turn must find nothing
    QVERIFY2(transcriptText(w).contains(QStringLiteral("The connection closed before the reply ended")), qPrintable(transcriptText(w)));
    QCOMPARE(w.chat(id)->messages.size(), before + 2);  // the question and the part of the reply that came
    QCOMPARE(w.chat(id)->messages[1].content, localText);
    QVERIFY(w.chat(other)->messages.isEmpty());
    // The next turn finds nothing there, and says so.
    pagedchat::test::sendAndWait(w, QStringLiteral("Hello?"));
    QVERIFY2(transcriptText(w).contains(QStringLiteral("Nothing answers at")), qPrintable(transcriptText(w)));
  }

  // Loading a local model replaces the local engine only: a remote reply in flight goes on,
  // and deleting its chat stops it on the server.
  void aLocalModelLoadLeavesARemoteReplyAlone() {
    Scene scene(m_model);
    QVERIFY(scene.ready());
    Server& server = scene.server;
    MainWindow& w = scene.w;
    const ChatId id = w.newChat();
    QVERIFY(w.setChatEngine(id, {server.qurl(), "SmolLM2-135M-Instruct.Q4_1"}));
    w.setChatSampling(id, greedy(300));
    QSignalSpy done(&w, &MainWindow::turnDone);
    auto* input = w.findChild<QPlainTextEdit*>(QStringLiteral("input"));
    input->setPlainText(QString::fromLatin1(pagedchat::test::kLongStoryAsk));
    QTest::keyClick(input, Qt::Key_Return, Qt::ControlModifier);
    QTRY_VERIFY_WITH_TIMEOUT(w.chat(id)->messages.size() == 2 && !w.chat(id)->messages[1].content.isEmpty(), 60000);
    pagedchat::test::loadAndWait(w, m_model);
    QVERIFY(done.wait(120000));
    const MessageRecord& reply = w.chat(id)->messages[1];
    QVERIFY2(reply.metrics.finishReason == QLatin1String("stop") || reply.metrics.finishReason == QLatin1String("length"),
             qPrintable(reply.metrics.finishReason));

    // Deleting a chat whose remote reply streams ends the request on the server.
    const ChatId gone = w.newChat();
    QVERIFY(w.setChatEngine(gone, {server.qurl(), "SmolLM2-135M-Instruct.Q4_1"}));
    w.setChatSampling(gone, greedy(400));
    input->setPlainText(QString::fromLatin1(pagedchat::test::kLongStoryAsk));
    QTest::keyClick(input, Qt::Key_Return, Qt::ControlModifier);
    QTRY_VERIFY_WITH_TIMEOUT(w.chat(gone)->messages.size() == 2 && !w.chat(gone)->messages[1].content.isEmpty(), 60000);
    auto* remote = w.session().findChild<RemoteBridge*>();
    QVERIFY(remote && remote->isReplying(gone));
    QVERIFY(w.session().findChild<ChatController*>());
    w.session().findChild<ChatController*>()->remove(gone);
    QTRY_VERIFY_WITH_TIMEOUT(!remote->isReplying(gone), 10000);
  }

  // A teacher's server watched: the pool view draws the remote pool, and after a scripted run
  // (three requests sharing a system prompt, one of two samples) the frame it drew equals the
  // server's own snapshot block for block; a server that goes puts this machine's pool back.
  void aRemotePoolIsDrawnBlockForBlock() {
    Scene scene(m_model);
    QVERIFY(scene.ready());
    Server& server = scene.server;
    MainWindow& w = scene.w;
    auto* watchMenu = w.findChild<QMenu*>(QStringLiteral("watchPoolMenu"));
    emit watchMenu->aboutToShow();
    QAction* watch = nullptr;
    for (QAction* a : watchMenu->actions())
      if (a->text() == server.qurl()) watch = a;
    QVERIFY(watch);
    watch->trigger();
    QCOMPARE(w.session().pool().watchedPool(), server.qurl());
    auto* watcher = w.session().findChild<RemotePoolWatcher*>();
    QVERIFY(watcher);
    PoolFrame last;
    int frames = 0;
    connect(watcher, &RemotePoolWatcher::frame, this, [&](const PoolFrame& f) {
      last = f;
      ++frames;
    });
    QTRY_VERIFY_WITH_TIMEOUT(frames >= 1, 10000);  // the first: a snapshot of the pool as it is
    QVERIFY(w.findChild<QDockWidget*>(QStringLiteral("kvBlocksDock"))->windowTitle().contains(QUrl(server.qurl()).authority()));

    const std::string system = "You are a careful assistant who answers in one short sentence, always politely and clearly.";
    for (const std::string question : {"What is a river?", "What is a lake?", "What is a sea?"}) {
      pagedchat::remote::RemoteChatRequest r = pagedchat::test::ask(question, 12);
      r.messages.insert(r.messages.begin(), {"system", system});
      if (question == "What is a lake?") r.n = 2;  // two samples: forks sharing the prompt's blocks
      QVERIFY(pagedchat::remote::stream_chat({server.url, {}}, r).error.ok());
    }
    std::string json;
    QVERIFY(pagedchat::remote::pool_snapshot({server.url, {}}, &json).ok());
    PoolFrame own;
    QString why;
    QVERIFY2(RemotePoolWatcher::frameFromJson(QByteArray::fromStdString(json), &own, &why), qPrintable(why));
    QTRY_VERIFY_WITH_TIMEOUT(last.stepIndex == own.stepIndex, 10000);
    QCOMPARE(last.snapshot.blocks.size(), own.snapshot.blocks.size());
    int cachedBlocks = 0;
    for (size_t i = 0; i < own.snapshot.blocks.size(); ++i) {
      const pagedchat::KvBlockInfo &a = last.snapshot.blocks[i], &b = own.snapshot.blocks[i];
      QVERIFY2(a.state == b.state && a.ref_count == b.ref_count && a.num_filled == b.num_filled && a.has_hash == b.has_hash &&
                   a.in_prefix_cache == b.in_prefix_cache && a.owners == b.owners,
               qPrintable(QStringLiteral("block %1").arg(i)));
      cachedBlocks += b.state == pagedchat::BlockState::cached;
    }
    QCOMPARE(last.snapshot.cached_lru, own.snapshot.cached_lru);
    QVERIFY2(cachedBlocks >= 2, qPrintable(QString::number(cachedBlocks)));  // the shared prompt's blocks stay for the prefix cache
    QCOMPARE(computeKvPoolNumbers(last).numCached, cachedBlocks);  // what the panel's numbers say

    server.process.kill();
    QTRY_VERIFY_WITH_TIMEOUT(w.session().pool().watchedPool().isEmpty(), 20000);
    QCOMPARE(w.findChild<QDockWidget*>(QStringLiteral("kvBlocksDock"))->windowTitle(), QStringLiteral("KV blocks"));
    QVERIFY2(w.findChild<QLabel*>(QStringLiteral("status"))->text().contains(QStringLiteral("no longer shown")),
             qPrintable(w.findChild<QLabel*>(QStringLiteral("status"))->text()));
  }

  // The class watches the teacher's server (--allow-pool-control): the window's Pause and Step
  // act on that server's engine, a request from elsewhere waits while paused and moves a step
  // at a time; unpaused, it ends.
  void theEngineToolbarStepsAWatchedServer() {
    Scene scene(m_model, {"--allow-pool-control"});
    QVERIFY(scene.ready());
    Server& server = scene.server;
    MainWindow& w = scene.w;
    w.session().pool().watchPool(server.qurl());
    auto* watcher = w.session().findChild<RemotePoolWatcher*>();
    int64_t lastStep = -1;
    connect(watcher, &RemotePoolWatcher::frame, this, [&](const PoolFrame& f) { lastStep = f.stepIndex; });
    QTRY_VERIFY_WITH_TIMEOUT(lastStep >= 0, 10000);
    w.findChild<QAction*>(QStringLiteral("pauseEngine"))->setChecked(true);
    QTest::qWait(300);  // the pause reaches the server
    std::atomic<int> deltas{0};
    pagedchat::remote::RemoteChatResult reply;
    std::thread asking([&] {
      reply = pagedchat::remote::stream_chat({server.url, {}}, pagedchat::test::ask("Name three rivers of Europe.", 12),
                                             [&](const pagedchat::remote::RemoteDelta&) { ++deltas; });
    });
    QTest::qWait(500);
    QCOMPARE(deltas.load(), 0);
    const int64_t pausedAt = lastStep;
    w.findChild<QAction*>(QStringLiteral("stepEngine"))->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(lastStep == pausedAt + 1, 10000);  // one step, drawn
    QTRY_COMPARE_WITH_TIMEOUT(deltas.load(), 1, 10000);          // its one token
    w.findChild<QAction*>(QStringLiteral("pauseEngine"))->setChecked(false);
    asking.join();
    QVERIFY(reply.error.ok());
    QCOMPARE(reply.finish_reasons.at(0), std::string("length"));
  }

  void aKeyIsAskedForAndKeptOutOfTheDatabase() {
    Server server(m_model, {"--api-key", "s3cret-key"});
    QVERIFY(!server.url.empty());
    AppServices services;
    MainWindow w(services);
    w.show();
    QString note;
    QVERIFY(!addThroughTheDialog(w, server.qurl(), QString(), &note));
    QVERIFY2(note.contains(QStringLiteral("refused the API key (401)")), qPrintable(note));
    QVERIFY(addThroughTheDialog(w, server.qurl(), QStringLiteral("s3cret-key"), &note));
    const ChatId id = w.newChat();
    QVERIFY(w.setChatEngine(id, {server.qurl(), "SmolLM2-135M-Instruct.Q4_1"}));
    w.setChatSampling(id, greedy(4));
    pagedchat::test::sendAndWait(w, QStringLiteral("Hi!"));
    QCOMPARE(w.chat(id)->messages.size(), 2);
    QVERIFY(!w.chat(id)->messages[1].content.isEmpty());
    // The key: in a file only the user may read, and in no file of the chat database.
    QFile keys(RemoteEndpoints::keysPath());
    QVERIFY(keys.exists());
    QCOMPARE(keys.permissions() & (QFileDevice::ReadGroup | QFileDevice::ReadOther | QFileDevice::WriteGroup | QFileDevice::WriteOther),
             QFileDevice::Permissions());
    QVERIFY(keys.open(QIODevice::ReadOnly) && keys.readAll().contains("s3cret-key"));
    for (const char* suffix : {"", "-wal"}) {
      QFile db(ChatDatabase::defaultPath() + QLatin1String(suffix));
      if (db.open(QIODevice::ReadOnly)) QVERIFY2(!db.readAll().contains("s3cret-key"), suffix);
    }
  }
};

QTEST_MAIN(TestRemoteChats)
#include "test_remote_chats.moc"
