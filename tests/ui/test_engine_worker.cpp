// The app's bridge keeps a chat's sequence parked in the engine between turns: the second
// turn computes only the tokens that close the first reply and ask the new question, not the
// whole chat again; a stopped reply frees the sequence and the next turn reads the chat afresh.
// The worker is driven on the test's thread, which is then its engine thread.

#include <QtTest>

#include "engine/engine/engine.h"
#include "engine/model/model.h"
#include "support/test_env.h"
#include "ui/engine_worker.h"

using namespace pagedchat;

namespace {
using Chat = QVector<QPair<QString, QString>>;

struct Turn {
  QString text;
  int finished = 0, failed = 0;
};

Turn runTurn(EngineWorker& w, const Chat& chat, int maxTokens, bool stopAtFirstText = false) {
  Turn t;
  QObject scope;  // the connections live for this turn only
  QObject::connect(&w, &EngineWorker::replyText, &scope, [&](const QString& s) {
    t.text += s;
    if (stopAtFirstText) w.requestStop();
  });
  QObject::connect(&w, &EngineWorker::replyFinished, &scope, [&] { ++t.finished; });
  QObject::connect(&w, &EngineWorker::replyFailed, &scope, [&](const QString& e) {
    ++t.failed;
    qWarning("%s", qPrintable(e));
  });
  w.generate(chat, 0.0, maxTokens);  // synchronous: the worker lives on this thread
  return t;
}
}  // namespace

class TestEngineWorker : public QObject {
  Q_OBJECT
  std::string modelPath_;
  std::unique_ptr<Model> model_;  // to count tokens independently of the worker

 private slots:
  void initTestCase() {
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    modelPath_ = model;
    model_ = Model::load(model);
    QCOMPARE(model_->chat_template.style(), ChatTemplate::Style::kChatML);  // SmolLM2
  }

  void aSecondTurnComputesOnlyItsNewTokens() {
    EngineWorker w;
    QSignalSpy loaded(&w, &EngineWorker::modelLoaded);
    w.loadModel(QString::fromStdString(modelPath_), 2);
    QCOMPARE(loaded.size(), 1);

    Chat chat{{"user", "What is the capital of France?"}};
    Turn first = runTurn(w, chat, 24);
    QCOMPARE(first.finished, 1);
    QVERIFY(!first.text.isEmpty());
    const EngineStats s1 = w.engineStats();
    const auto firstPrompt = model_->encode_chat({{"user", "What is the capital of France?"}});
    QCOMPARE(s1.num_prefill_tokens, static_cast<int64_t>(firstPrompt.size()));
    QCOMPARE(s1.num_parked, 1);

    chat.append(qMakePair(QStringLiteral("assistant"), first.text));
    chat.append(qMakePair(QStringLiteral("user"), QStringLiteral("And of Italy?")));
    Turn second = runTurn(w, chat, 24);
    QCOMPARE(second.finished, 1);
    QVERIFY(!second.text.isEmpty());
    const EngineStats s2 = w.engineStats();
    // New: the end of the first reply and the new user turn, plus the reply's last sampled
    // token when the reply ended by its length (that token was never fed back).
    const auto added = model_->tokenizer->encode(
        "<|im_end|>\n<|im_start|>user\nAnd of Italy?<|im_end|>\n<|im_start|>assistant\n", false, true);
    const int64_t grew = s2.num_prefill_tokens - s1.num_prefill_tokens;
    const auto whole = model_->encode_chat({{"user", "What is the capital of France?"},
                                            {"assistant", first.text.toStdString()},
                                            {"user", "And of Italy?"}});
    QVERIFY2(grew == static_cast<int64_t>(added.size()) || grew == static_cast<int64_t>(added.size()) + 1,
             qPrintable(QStringLiteral("computed %1 prompt tokens; the turn adds %2, the whole chat has %3")
                            .arg(grew).arg(added.size()).arg(whole.size())));
    qInfo("second turn: %lld prompt tokens computed; the whole chat has %zu", static_cast<long long>(grew), whole.size());
    QCOMPARE(s2.num_parked, 1);  // the same sequence, parked again
  }

  void aStoppedReplyFreesTheChatAndTheNextTurnReadsItAfresh() {
    EngineWorker w;
    w.loadModel(QString::fromStdString(modelPath_), 2);
    Chat chat{{"user", "Tell me a long story about a dragon."}};
    Turn stopped = runTurn(w, chat, 200, true);
    QCOMPARE(stopped.finished, 1);
    QCOMPARE(w.engineStats().num_parked, 0);  // an aborted sequence is freed, not parked
    QCOMPARE(w.engineStats().num_running, 0);

    chat.append(qMakePair(QStringLiteral("assistant"), stopped.text));
    chat.append(qMakePair(QStringLiteral("user"), QStringLiteral("Thanks.")));
    const int64_t before = w.engineStats().num_prefill_tokens;
    Turn next = runTurn(w, chat, 8);
    QCOMPARE(next.finished, 1);
    QCOMPARE(next.failed, 0);
    // The whole chat again, less what the prefix cache still held of the first prompt.
    const auto whole = model_->encode_chat({{"user", "Tell me a long story about a dragon."},
                                            {"assistant", stopped.text.toStdString()},
                                            {"user", "Thanks."}});
    const int64_t grew = w.engineStats().num_prefill_tokens - before;
    QVERIFY2(grew > 0 && grew <= static_cast<int64_t>(whole.size()), qPrintable(QString::number(grew)));
    QCOMPARE(w.engineStats().num_parked, 1);
  }

  void generateWithoutAModelFails() {
    EngineWorker w;
    Turn t = runTurn(w, {{"user", "hi"}}, 4);
    QCOMPARE(t.failed, 1);
    QCOMPARE(w.engineStats().num_steps, int64_t{0});
  }
};

QTEST_MAIN(TestEngineWorker)
#include "test_engine_worker.moc"
