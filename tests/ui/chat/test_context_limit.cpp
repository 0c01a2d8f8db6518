// A chat that outgrows the model's context never dies, driven through the real window with a
// 320-token context. Under "drop the oldest turns" it goes on: the oldest turns leave the
// model's view (shown greyed and marked), the model reads exactly the system prompt and the
// recent turns (the chat's sequence in the pool holds those tokens), and the system prompt's
// blocks are still served by the prefix cache. Under "stop and ask" the transcript says so and
// offers three choices, each of which works: cancel (the question back in the input), drop the
// oldest turns, or continue in a new chat from the recent messages.

#include <QtTest>

#include <QComboBox>
#include <QPlainTextEdit>
#include <QTextBrowser>

#include "engine/chat/chat_model.h"
#include "engine/model/model.h"
#include "support/test_env.h"
#include "support/window_driver.h"
#include "appcore/session/pool_control.h"
#include "ui/shell/main_window.h"

namespace {
const char* const kQuestions[] = {
    "Describe the water cycle in a few sentences, with evaporation, condensation and rain.",
    "Now explain how clouds form over mountains and why it rains more on one side of them.",
    "Tell me how rivers carve valleys over thousands of years, and what a delta is.",
    "What is groundwater, and how do wells reach it in dry places?",
    "Why is the sea salty while rivers are fresh?",
    "How do glaciers store water, and what happens when they melt?",
    "What are aquifers made of, and how fast does water move through them?",
    "How do plants return water to the air, and what is transpiration?",
    "Why do some lakes have no outlet, and what happens to their water?",
    "How is rain measured, and what is a rain gauge?",
};
}  // namespace

class TestContextLimit : public QObject {
  Q_OBJECT
  QString m_model;
  std::unique_ptr<pagedchat::Model> m_tokens;  // to count tokens independently of the app
  pagedchat::ChatModel m_chat;  // m_tokens with its own chat template

  void open(MainWindow& w) {
    AppSettings s = w.settings();
    s.maxContext = 320;
    s.sampling.maxTokens = 48;
    s.sampling.temperature = 0.0;
    w.applySettings(s);
    pagedchat::test::loadAndWait(w, m_model);
  }
  QString transcriptText(MainWindow& w) { return w.findChild<QTextBrowser*>(QStringLiteral("transcript"))->toPlainText(); }

 private slots:
  void initTestCase() {
    pagedchat::test::useFreshDataFolder();
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    m_model = QString::fromStdString(model);
    m_tokens = pagedchat::Model::load(model);
    m_chat = pagedchat::ChatModel(*m_tokens, pagedchat::ChatModel::own_template(*m_tokens));
  }

  void dropTheOldestTurnsGoesOn() {
    AppServices services;
    MainWindow w(services);
    w.show();
    open(w);
    const ChatId chat = w.newChat();
    QSignalSpy frames(&w.session().pool(), &PoolControl::localFrame);
    int turns = 0;
    while (w.chat(chat)->firstInView == 0 && turns < 9) pagedchat::test::sendAndWait(w, kQuestions[turns++]);
    const ChatRecord* r = w.chat(chat);
    QVERIFY2(r->firstInView > 0, "the chat never outgrew its context");
    QCOMPARE(r->messages.last().role, QStringLiteral("assistant"));
    QVERIFY(!r->messages.last().content.isEmpty());  // it replied
    QVERIFY(r->firstInView % 2 == 0);                // whole turns
    QVERIFY(transcriptText(w).contains(QStringLiteral("outside the model's view")));
    // What the model read: the template's system prompt and the turns still in view.
    std::vector<pagedchat::ChatMessage> kept;
    for (int i = r->firstInView; i < r->messages.size() - 1; ++i)
      kept.push_back({r->messages[i].role.toStdString(), r->messages[i].content.toStdString()});
    const std::vector<int32_t> prompt = m_chat.encode_chat(kept);
    QTest::qWait(300);
    const PoolFrame f = frames.last()[0].value<PoolFrame>();
    bool found = false;
    for (const PoolFrameSequence& s : f.sequences) {
      if (s.chatTitle != r->title) continue;
      found = true;
      QVERIFY(s.tokens.size() > prompt.size());
      QVERIFY(std::equal(prompt.begin(), prompt.end(), s.tokens.begin()));
    }
    QVERIFY(found);
    // The system prompt's block came from the prefix cache, not computed again.
    QVERIFY(r->messages.last().metrics.numCachedPromptTokens > 0);
    // And it goes on: the next turn replies too.
    pagedchat::test::sendAndWait(w, kQuestions[turns]);
    QCOMPARE(w.chat(chat)->messages.last().role, QStringLiteral("assistant"));
    QVERIFY(!w.chat(chat)->messages.last().content.isEmpty());
  }

  void stopAndAskOffersThreeChoicesThatWork() {
    AppServices services;
    MainWindow w(services);
    w.show();
    open(w);
    const ChatId chat = w.newChat();
    auto* policy = w.findChild<QComboBox*>(QStringLiteral("contextPolicy"));
    policy->setCurrentIndex(policy->findData(static_cast<int>(ContextPolicy::stopAndAsk)));
    emit policy->activated(policy->currentIndex());
    QCOMPARE(w.chat(chat)->contextPolicy, ContextPolicy::stopAndAsk);
    int turns = 0;
    auto full = [&] { return transcriptText(w).contains(QStringLiteral("no longer fits")); };
    while (!full() && turns < 10) pagedchat::test::sendAndWait(w, kQuestions[turns++]);
    QVERIFY2(full(), "the chat never filled its context");
    const QString text = transcriptText(w);
    QVERIFY(text.contains(QStringLiteral("Drop the oldest turns")) && text.contains(QStringLiteral("Continue in a new chat")) &&
            text.contains(QStringLiteral("Cancel")));
    QCOMPARE(w.chat(chat)->messages.last().role, QStringLiteral("user"));  // asked, not answered
    QVERIFY(!w.isReplying(chat));
    QCOMPARE(w.chat(chat)->firstInView, 0);
    auto* transcript = w.findChild<QTextBrowser*>(QStringLiteral("transcript"));

    // Cancel: the question comes back to the input, the chat as it was before it.
    const int before = w.chat(chat)->messages.size();
    emit transcript->anchorClicked(QUrl(QStringLiteral("context:cancel")));
    QCOMPARE(w.chat(chat)->messages.size(), before - 1);
    QCOMPARE(w.findChild<QPlainTextEdit*>(QStringLiteral("input"))->toPlainText(), QString::fromUtf8(kQuestions[turns - 1]));
    QVERIFY(!full());

    // Asked again, then: drop the oldest turns (this chat goes on).
    pagedchat::test::sendAndWait(w, kQuestions[turns - 1]);
    QVERIFY(full());
    QSignalSpy done(&w, &MainWindow::turnDone);
    emit transcript->anchorClicked(QUrl(QStringLiteral("context:drop")));
    QVERIFY(done.wait(120000));
    QVERIFY(w.chat(chat)->firstInView > 0);
    QCOMPARE(w.chat(chat)->messages.last().role, QStringLiteral("assistant"));

    // Filled again, then: continue in a new chat; this one stays as it is.
    while (!full() && turns < 10) pagedchat::test::sendAndWait(w, kQuestions[turns++]);
    QVERIFY2(full(), "the chat did not fill its context again");
    const int parentMessages = w.chat(chat)->messages.size();
    emit transcript->anchorClicked(QUrl(QStringLiteral("context:recent")));
    QVERIFY(done.wait(120000));
    const ChatId child = w.currentChat();
    QVERIFY(child != chat);
    QCOMPARE(w.chat(child)->parentId, chat);
    QVERIFY(w.chat(child)->firstInView > 0);
    QCOMPARE(w.chat(child)->messages.last().role, QStringLiteral("assistant"));
    QCOMPARE(w.chat(chat)->messages.size(), parentMessages);
  }
};

QTEST_MAIN(TestContextLimit)
#include "test_context_limit.moc"
