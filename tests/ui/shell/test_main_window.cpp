// The main window drives the real engine: a message typed and sent streams a reply into the
// transcript with its metrics; a fork at the latest message appears under its parent and
// shares the parent's blocks; a compare round shows N columns and the picked one becomes the
// reply; Ctrl+Tab / Ctrl+Shift+Tab cycle the chats; chats come back after a restart; a bad model
// file is reported and nothing breaks.
// Chats are saved in a temporary data dir (QStandardPaths test mode).

#include <QtTest>

#include <QCheckBox>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTextBrowser>
#include <QTreeWidget>

#include "support/test_env.h"
#include "support/window_driver.h"
#include "appcore/chat/chat_database.h"
#include "ui/chat/compare_view.h"
#include "ui/pool_panel/kv_pool_panel.h"
#include "ui/pool_view/kv_pool_view.h"
#include "appcore/session/pool_control.h"
#include "ui/shell/main_window.h"

class TestMainWindow : public QObject {
  Q_OBJECT
  QString m_model;

  void loaded(MainWindow& w) { pagedchat::test::loadAndWait(w, m_model); }
  void sendAndWait(MainWindow& w, const QString& text) { pagedchat::test::sendAndWait(w, text); }


 private slots:
  void initTestCase() {
    pagedchat::test::useFreshDataFolder();
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    m_model = QString::fromStdString(model);
  }

  void sendsAMessageAndStreamsTheReply() {
    AppServices services;
    MainWindow w(services);
    w.show();
    loaded(w);
    QSignalSpy done(&w, &MainWindow::turnDone);
    auto* input = w.findChild<QPlainTextEdit*>(QStringLiteral("input"));
    auto* transcript = w.findChild<QTextBrowser*>(QStringLiteral("transcript"));
    input->setPlainText(QStringLiteral("What is the capital of France?"));
    QTest::keyClick(input, Qt::Key_Return, Qt::ControlModifier);
    // Streams: reply text shows up before the turn is done.
    QTRY_VERIFY_WITH_TIMEOUT(transcript->toPlainText().section(QStringLiteral("Assistant"), 1).trimmed().size() > 3 ||
                                 !done.isEmpty(), 60000);
    if (done.isEmpty()) QVERIFY(done.wait(120000));
    const QString text = transcript->toPlainText();
    QVERIFY2(text.contains(QStringLiteral("What is the capital of France?")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("tok/s")) && text.contains(QStringLiteral("first token")), qPrintable(text));
    const ChatRecord* chat = w.chat(w.currentChat());
    QCOMPARE(chat->messages.size(), 2);
    QVERIFY(chat->messages[1].metrics.numTokens > 0);
    QVERIFY(w.contextUsed(w.currentChat()) > 0);
    QVERIFY(w.findChild<QLabel*>(QStringLiteral("contextUsed"))->text().contains(QStringLiteral("/ 2048")));
  }

  void aForkAtTheLatestMessageIsListedUnderItsParentAndSharesBlocks() {
    AppServices services;
    MainWindow w(services);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    loaded(w);
    const ChatId parent = w.newChat();
    sendAndWait(w, QStringLiteral("Name a fruit."));
    QSignalSpy frames(&w.session().pool(), &PoolControl::localFrame);
    QTest::keyClick(&w, Qt::Key_F, Qt::ControlModifier | Qt::ShiftModifier);  // Ctrl+Shift+F
    const ChatId child = w.currentChat();
    QVERIFY(child != parent);
    QCOMPARE(w.chat(child)->parentId, parent);
    QCOMPARE(w.chat(child)->messages.size(), 2);
    auto* list = w.findChild<QTreeWidget*>(QStringLiteral("chatList"));
    QTreeWidgetItem* item = list->currentItem();
    QVERIFY(item->parent() != nullptr);  // indented under its parent
    QVERIFY2(item->text(0).contains(QStringLiteral("fork of")) && item->text(0).contains(QStringLiteral("at message 2")),
             qPrintable(item->text(0)));
    QTRY_VERIFY_WITH_TIMEOUT(!frames.isEmpty() && frames.last()[0].value<PoolFrame>().stats.num_parked >= 2, 20000);
    const PoolFrame f = frames.last()[0].value<PoolFrame>();
    int shared = 0;
    for (const auto& b : f.snapshot.blocks) shared += b.ref_count == 2 ? 1 : 0;
    QVERIFY(shared > 0);
  }

  void aCompareRoundShowsColumnsAndThePickedOneContinues() {
    AppServices services;
    MainWindow w(services);
    w.show();
    loaded(w);
    w.newChat();
    w.findChild<QSpinBox*>(QStringLiteral("samples"))->setValue(3);
    sendAndWait(w, QStringLiteral("Say a random word."));
    QCOMPARE(w.findChild<QSpinBox*>(QStringLiteral("samples"))->value(), 1);  // a compare is one message's: the next is one reply again
    auto* compare = w.findChild<CompareView*>(QStringLiteral("compareView"));
    QVERIFY(compare->isVisible());
    QCOMPARE(compare->numColumns(), 3);
    auto* pick = w.findChild<QPushButton*>(QStringLiteral("pickSample2"));
    QVERIFY(pick && pick->isEnabled());
    const QString third = compare->text(2);
    const QString thirdFigures = w.sampleMetrics(w.currentChat(), 2).summary();
    // Under the column, its figures wrap between one another, never inside one.
    const QString shown = w.findChild<QWidget*>(QStringLiteral("compareColumn2"))->findChild<QLabel*>(QStringLiteral("sampleMetrics"))->text();
    QCOMPARE(QString(shown).replace(QChar(0x00a0), QLatin1Char(' ')), thirdFigures);
    QVERIFY2(!shown.split(QStringLiteral(" · ")).join(QString()).contains(QLatin1Char(' ')), qPrintable(shown));
    pick->click();
    QCOMPARE(w.findChild<QLabel*>(QStringLiteral("status"))->text(), thirdFigures);  // the picked one's figures
    const ChatRecord* chat = w.chat(w.currentChat());
    QCOMPARE(chat->messages.size(), 2);
    QCOMPARE(chat->messages[1].content, third);
    QVERIFY(!compare->isVisible());
  }

  // The compare view shows the question the columns answer, and a column that has ended can be
  // picked while the others still run: they stop, and the picked one is the chat's reply, its
  // sequence the one the chat keeps.
  void aSampleThatEndedCanBePickedWhileOthersRun() {
    AppServices services;
    MainWindow w(services);
    w.show();
    PoolFrame last;
    connect(&w.session().pool(), &PoolControl::localFrame, this, [&](const PoolFrame& f) { last = f; });
    loaded(w);
    const AppSettings before = w.settings();
    auto restore = qScopeGuard([&] { w.applySettings(before); });  // the settings are saved: the next cases get the defaults
    AppSettings s = before;
    s.sampling.maxTokens = 400;
    s.sampling.minP = 0.0;
    s.compareColumns[0].temperature = 0.0;  // a short greedy answer
    for (int i = 1; i < 3; ++i) {            // noise, long: at T 2 with no top-k or top-p, an end token is rare
      s.compareColumns[i].temperature = 2.0;
      s.compareColumns[i].topK = 0;
      s.compareColumns[i].topP = 1.0;
      s.compareColumns[i].seed = 7 + static_cast<quint64>(i);
    }
    w.applySettings(s);
    const ChatId id = w.newChat();
    w.findChild<QSpinBox*>(QStringLiteral("samples"))->setValue(3);
    w.findChild<QCheckBox*>(QStringLiteral("varySettings"))->setChecked(true);
    QSignalSpy done(&w, &MainWindow::turnDone);
    auto* input = w.findChild<QPlainTextEdit*>(QStringLiteral("input"));
    const QString question = QStringLiteral("Answer in one word: what colour is the sky?");
    input->setPlainText(question);
    QTest::keyClick(input, Qt::Key_Return, Qt::ControlModifier);
    auto* compare = w.findChild<CompareView*>(QStringLiteral("compareView"));
    QTRY_VERIFY(compare->isVisible());
    QCOMPARE(w.findChild<QLabel*>(QStringLiteral("compareQuestion"))->text(), QStringLiteral("You asked: ") + question);
    auto* first = w.findChild<QPushButton*>(QStringLiteral("pickSample0"));
    QTRY_VERIFY_WITH_TIMEOUT(first->isEnabled(), 60000);
    QVERIFY2(done.isEmpty(), qPrintable(QStringLiteral("the long columns ended first: %1 | %2")
                                            .arg(w.sampleMetrics(id, 0).summary() + QStringLiteral(" | ") + w.sampleMetrics(id, 1).summary(), w.sampleMetrics(id, 2).summary())));
    QVERIFY2(!w.findChild<QPushButton*>(QStringLiteral("pickSample1"))->isEnabled(),
             qPrintable(w.sampleMetrics(id, 1).summary() + compare->text(1)));  // still running
    const QString picked = compare->text(0);
    first->click();
    QVERIFY(!first->isEnabled());  // once
    QVERIFY(done.wait(60000));
    QCOMPARE(w.chat(id)->messages.size(), 2);
    QCOMPARE(w.chat(id)->messages[1].content, picked);
    QVERIFY(w.chat(id)->messages[1].metrics.numTokens > 0 && w.chat(id)->messages[1].metrics.numTokens < 400);
    QVERIFY(!compare->isVisible());
    // What stays in the pool is the chat's one sequence; the stopped columns went.
    QTRY_VERIFY_WITH_TIMEOUT(last.stats.num_running == 0 && last.stats.num_parked == 1, 10000);
  }

  // Beams in the compare view: n beams of one beam search, best first, distinct replies; the
  // picked one continues, and nothing of the beams stays in the pool.
  void aCompareByBeamSearchShowsTheBestBeams() {
    AppServices services;
    MainWindow w(services);
    w.show();
    PoolFrame last;
    connect(&w.session().pool(), &PoolControl::localFrame, this, [&](const PoolFrame& f) { last = f; });
    loaded(w);
    AppSettings s = w.settings();
    s.sampling.maxTokens = 16;
    w.applySettings(s);
    w.newChat();
    w.findChild<QSpinBox*>(QStringLiteral("samples"))->setValue(3);
    auto* beams = w.findChild<QCheckBox*>(QStringLiteral("beamSearch"));
    auto* vary = w.findChild<QCheckBox*>(QStringLiteral("varySettings"));
    vary->setChecked(true);
    beams->setChecked(true);
    QVERIFY(!vary->isChecked());  // one or the other
    sendAndWait(w, QStringLiteral("What is the capital of France?"));
    auto* compare = w.findChild<CompareView*>(QStringLiteral("compareView"));
    QVERIFY(compare->isVisible());
    QCOMPARE(compare->numColumns(), 3);
    QCOMPARE(compare->titles().first(), QStringLiteral("beam 1 (most likely)"));
    const QStringList texts{compare->text(0), compare->text(1), compare->text(2)};
    for (const QString& t : texts) QVERIFY2(!t.trimmed().isEmpty(), qPrintable(texts.join(" | ")));
    QCOMPARE(QSet<QString>(texts.begin(), texts.end()).size(), 3);
    QTRY_VERIFY_WITH_TIMEOUT(last.stats.num_running == 0 && last.stats.kv.num_used_blocks == 0, 5000);
    // Under each column: its log-probability and no decode speed (the tokens all came at the end).
    for (int i = 0; i < 3; ++i) {
      const ReplyMetrics m = w.sampleMetrics(w.currentChat(), i);
      QVERIFY(m.beamSearch);
      QVERIFY2(m.summary().contains(QStringLiteral("beam search")) && !m.summary().contains(QStringLiteral("tok/s")),
               qPrintable(m.summary()));
      QVERIFY(m.logprob < 0);
    }
    w.findChild<QPushButton*>(QStringLiteral("pickSample1"))->click();
    QCOMPARE(w.chat(w.currentChat())->messages[1].content, texts[1]);
    // The chat goes on from the picked beam (its prompt through the prefix cache).
    w.findChild<QSpinBox*>(QStringLiteral("samples"))->setValue(1);
    sendAndWait(w, QStringLiteral("And of Italy?"));
    QCOMPARE(w.chat(w.currentChat())->messages.size(), 4);
  }

  void aCompareWithDifferentSettingsSamplesEachColumnItsWay() {
    AppServices services;
    MainWindow w(services);
    w.show();
    PoolFrame last;  // the latest frame: the engine's counters as of its last step
    connect(&w.session().pool(), &PoolControl::localFrame, this, [&](const PoolFrame& f) { last = f; });
    loaded(w);
    AppSettings s = w.settings();
    s.sampling.maxTokens = 10;
    s.sampling.temperature = 0.0;
    s.compareColumns[0].temperature = 0.0;  // greedy
    s.compareColumns[1].temperature = 1.2;
    s.compareColumns[1].seed = 5;
    s.compareColumns[2].temperature = 0.8;
    s.compareColumns[2].topK = 3;
    s.compareColumns[2].seed = 9;
    w.applySettings(s);
    // The greedy reply of the same message, alone, first.
    w.newChat();
    w.findChild<QSpinBox*>(QStringLiteral("samples"))->setValue(1);
    sendAndWait(w, QStringLiteral("Name a kind of tree."));
    const QString greedyAlone = w.chat(w.currentChat())->messages.last().content;
    // Greedy here is exact whatever else is in the batch, so column 1 must say the same.
    s.sampling.temperature = 0.9;  // the defaults no longer greedy: the column decides
    w.applySettings(s);

    QTRY_VERIFY_WITH_TIMEOUT(last.stats.num_steps > 0 && last.stats.num_running == 0, 5000);
    const int64_t prefillBefore = last.stats.num_prefill_tokens;
    const int64_t stepsBefore = last.stats.num_steps;
    w.newChat();
    w.findChild<QSpinBox*>(QStringLiteral("samples"))->setValue(3);
    w.findChild<QCheckBox*>(QStringLiteral("varySettings"))->setChecked(true);
    QSignalSpy done(&w, &MainWindow::turnDone);
    auto* input = w.findChild<QPlainTextEdit*>(QStringLiteral("input"));
    input->setPlainText(QStringLiteral("Name a kind of tree."));
    QTest::keyClick(input, Qt::Key_Return, Qt::ControlModifier);
    QVERIFY(done.wait(120000));
    auto* compare = w.findChild<CompareView*>(QStringLiteral("compareView"));
    QCOMPARE(compare->numColumns(), 3);
    QCOMPARE(compare->titles(), (QStringList{QStringLiteral("greedy"), QStringLiteral("T 1.2 · top-p 0.95 · top-k 40 · seed 5"),
                                             QStringLiteral("T 0.8 · top-p 0.95 · top-k 3 · seed 9")}));
    QCOMPARE(compare->text(0), greedyAlone);
    // The prompt was computed once for the three columns: what the prefix cache did not serve.
    const ReplyMetrics m = w.sampleMetrics(w.currentChat(), 0);
    QVERIFY(m.numPromptTokens > 0);
    QTRY_VERIFY_WITH_TIMEOUT(last.stats.num_steps > stepsBefore && last.stats.num_running == 0, 5000);
    QCOMPARE(last.stats.num_prefill_tokens - prefillBefore, m.numPromptTokens - m.numCachedPromptTokens);
  }

  // Ctrl+Tab and Ctrl+Shift+Tab cycle the chats from the message input, with no "ambiguous
  // shortcut" left for Qt to drop (Shift+Tab arrives as Backtab).
  void ctrlTabAndCtrlShiftTabCycleChats() {
    AppServices services;
    MainWindow w(services);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    const ChatId a = w.newChat(), b = w.newChat(), c = w.newChat();
    QCOMPARE(w.currentChat(), c);
    auto* input = w.findChild<QPlainTextEdit*>(QStringLiteral("input"));
    input->setFocus();
    QTest::keyClick(input, Qt::Key_Backtab, Qt::ControlModifier | Qt::ShiftModifier);
    const ChatId back = w.currentChat();
    QVERIFY2(back != c, "Ctrl+Shift+Tab did not move");
    QTest::keyClick(input, Qt::Key_Tab, Qt::ControlModifier);
    QCOMPARE(w.currentChat(), c);
    QTest::keyClick(input, Qt::Key_Backtab, Qt::ControlModifier | Qt::ShiftModifier);
    QCOMPARE(w.currentChat(), back);
    // The chat listed before c (the list shows the most recent first: c, b, a, older ones).
    const QVector<ChatId> shown = w.chatIds();
    QCOMPARE(shown.mid(0, 3), (QVector<ChatId>{c, b, a}));
    QCOMPARE(back, shown[(shown.indexOf(c) + shown.size() - 1) % shown.size()]);
    QTest::keyClick(input, Qt::Key_Tab, Qt::ControlModifier | Qt::ShiftModifier);  // as some platforms spell it
    QVERIFY(w.currentChat() != back);
  }

  void chatsComeBackAfterARestart() {
    QVector<ChatId> ids;
    QString lastReply;
    ChatId withMessages = -1;
    {
      AppServices services;
      MainWindow w(services);
      loaded(w);
      ids = w.chatIds();
      QVERIFY(ids.size() >= 4);
      for (ChatId id : ids)
        if (!w.chat(id)->messages.isEmpty()) {
          withMessages = id;
          break;
        }
      QVERIFY(withMessages >= 0);
      lastReply = w.chat(withMessages)->messages.last().content;
    }
    AppServices servicesAgain;
    MainWindow again(servicesAgain);
    QCOMPARE(again.chatIds(), ids);  // the same order: most recent first
    QCOMPARE(again.chat(withMessages)->messages.last().content, lastReply);
    // The fork remembers its parent and where it came from.
    bool sawFork = false;
    for (ChatId id : ids) sawFork = sawFork || (again.chat(id)->parentId >= 0 && again.chat(id)->forkedAtMessage == 2);
    QVERIFY(sawFork);
  }

  // Pause engine (the toolbar): the pool view holds each step's marks until the next step.
  void pausingHoldsThePoolViewsMarks() {
    AppServices services;
    MainWindow w(services);
    auto* pause = w.findChild<QAction*>(QStringLiteral("pauseEngine"));
    KvPoolView* view = w.findChild<KvPoolPanel*>(QStringLiteral("kvPoolPanel"))->poolView();
    QVERIFY(!view->flashesHeld());
    pause->trigger();
    QVERIFY(view->flashesHeld());
    pause->trigger();
    QVERIFY(!view->flashesHeld());
  }

  void aBadFileIsReportedAndNothingBreaks() {
    PC_REQUIRE_ENV(data, "PAGEDCHAT_TEST_DATA");
    AppServices services;
    MainWindow w(services);
    w.loadModel(QString::fromStdString(data + "/gguf_broken/tensor_past_end.bin"), 1);
    auto* status = w.findChild<QLabel*>(QStringLiteral("status"));
    // In words a user reads (the load's detail is in the error box of a window already in use).
    QTRY_VERIFY_WITH_TIMEOUT(status->text().contains(QStringLiteral("The file is incomplete or damaged")), 10000);
    QVERIFY(!w.findChild<QPlainTextEdit*>(QStringLiteral("input"))->isEnabled());
  }
};

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
