// A gpt-oss reply in the app (appcore/bridge/harmony_reply.h, tool_turn.h): its harmony channels
// written as a <think> reply, the same however the reply streams in (every cut), that the
// transcript folds (reply_thinking.h) and later prompts send without the thinking; a reply
// continued from its cut; a tool turn's reply shown as it streams (only ever growing) and read
// back into its call; a call's reply keeping its thinking apart for the template
// (ChatRecord::engineMessages). No model: a ChatModel of gpt-oss's template alone.
#include <QtTest>

#include <QFile>

#include <string>

#include "appcore/bridge/harmony_reply.h"
#include "appcore/bridge/tool_turn.h"
#include "appcore/chat/chat_record.h"
#include "support/test_env.h"

namespace {

const std::string kReply = "<|channel|>analysis<|message|>17 has no divisors.<|end|><|start|>assistant<|channel|>final<|message|>Yes, prime.";
const std::string kCall = "<|channel|>analysis<|message|>Need the sum.<|end|><|start|>assistant<|channel|>commentary to=functions.add "
                          "<|constrain|>json<|message|>{\"a\": 2, \"b\": 3}";
const char* const kAdd = R"([{"type": "function", "function": {"name": "add", "description": "a + b", "parameters": {"type": "object",
  "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}}])";

std::string appForm(const std::string& first, const std::string& second, const std::string& continued = {}) {
  HarmonyReplyText t(continued);
  std::string out = t.push(first);
  out += t.push(second);
  out += t.finish();
  if (t.text() != continued + out) return "text() disagrees: " + t.text();
  return out;
}

}  // namespace

class TestHarmonyReply : public QObject {
  Q_OBJECT
  pagedchat::ChatTemplate tmpl_ = pagedchat::ChatTemplate::chatml();

 private slots:
  void initTestCase() {
    PC_REQUIRE_ENV(data, "PAGEDCHAT_TEST_DATA");
    QFile f(QString::fromStdString(data) + "/chat_templates/templates/gpt-oss-120b.jinja");
    QVERIFY(f.open(QIODevice::ReadOnly));
    tmpl_ = pagedchat::ChatTemplate::from_jinja(f.readAll().toStdString(), "<|startoftext|>", "<|return|>");
  }

  void aReplyIsWrittenAsAThinkingReply() {
    const std::string want = "<think>\n17 has no divisors.\n</think>\n\nYes, prime.";
    for (size_t cut = 0; cut <= kReply.size(); ++cut) QCOMPARE(appForm(kReply.substr(0, cut), kReply.substr(cut)), want);
    const ReplyThinking parts = splitThinking(QString::fromStdString(want));
    QVERIFY(parts.present && !parts.open);
    QCOMPARE(parts.thinking, QStringLiteral("17 has no divisors."));
    QCOMPARE(withoutThinking(QString::fromStdString(want)), QStringLiteral("Yes, prime."));
    QCOMPARE(appForm("<|channel|>final<|message|>Hi", ""), std::string("Hi"));  // straight to its answer
    // Cut by its length while thinking: still open, as a <think> reply cut so.
    QVERIFY(splitThinking(QString::fromStdString(appForm("<|channel|>analysis<|message|>Hmm, le", "t me"))).open);
  }

  void aContinuedReplyGoesOnWhereItWasCut() {
    QCOMPARE(appForm("and more.<|end|><|start|>assistant<|channel|>final<|message|>", "Yes.", "<think>\nThinking"),
             std::string("and more.\n</think>\n\nYes."));
    QCOMPARE(appForm(" the rest", "", "<think>\nX\n</think>\n\nHalf"), std::string(" the rest"));
  }

  void aToolTurnShowsAndReadsItsCall() {
    TurnSettings settings;
    settings.toolsJson = QString::fromUtf8(kAdd);
    const pagedchat::ChatModel model(std::shared_ptr<const pagedchat::Model>(), tmpl_);
    const ToolTurn turn(settings, model);
    QVERIFY(!turn.grammar());  // auto: the model's own choice
    QString shown;
    for (size_t end = 0; end <= kCall.size(); ++end) {
      const QString now = turn.shown(std::string_view(kCall).substr(0, end));
      QVERIFY2(now.startsWith(shown), qPrintable(now));  // only ever grows: the bridge sends what is new
      shown = now;
    }
    QVERIFY(!shown.contains(QStringLiteral("<|")));
    const ToolTurn::Reply r = turn.parse(kCall);
    QVERIFY(!r.brokenCall);
    QCOMPARE(r.calls.size(), 1);
    QCOMPARE(r.calls[0].name, QStringLiteral("add"));
    QCOMPARE(r.calls[0].arguments, QStringLiteral(R"({"a":2,"b":3})"));
    QCOMPARE(r.content, QStringLiteral("<think>\nNeed the sum.\n</think>\n\n"));  // the call ended the thinking
    QVERIFY(turn.parse(kCall.substr(0, kCall.size() - 4)).brokenCall);           // cut inside its arguments
  }

  void aCallsReplyKeepsItsThinkingForTheTemplate() {
    ChatRecord chat;
    chat.messages = {{.role = "user", .content = "2 + 3?"},
                     {.role = "assistant", .content = "<think>\nNeed the sum.\n</think>\n\n", .toolCalls = {{"call_1", "add", R"({"a":2,"b":3})"}}},
                     {.role = "tool", .content = "5", .toolCallId = "call_1", .toolName = "add"},
                     {.role = "assistant", .content = "<think>\nDone.\n</think>\n\nIt is 5."},
                     {.role = "user", .content = "Thanks"}};
    const ChatMessages m = chat.engineMessages(QString());
    QCOMPARE(m[1].content, QString());
    QCOMPARE(m[1].reasoning, QStringLiteral("Need the sum."));
    QCOMPARE(m[3].content, QStringLiteral("It is 5."));
    QCOMPARE(m[3].reasoning, QString());  // an answer's thinking is dropped, as the templates drop it
    const pagedchat::ToolSet tools(kAdd);
    const std::string prompt = tmpl_.apply(toEngineMessages(m.mid(0, 3)), true, &tools).str();
    QVERIFY2(prompt.find("<|channel|>analysis<|message|>Need the sum.<|end|><|start|>assistant to=functions.add") != std::string::npos,
             prompt.c_str());
  }
};

QTEST_GUILESS_MAIN(TestHarmonyReply)
#include "test_harmony_reply.moc"
