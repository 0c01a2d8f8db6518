// gpt-oss's harmony reply split into thinking and answer (engine/chat/harmony.h, through
// ReasoningSplitter::harmony): the same split however the reply is cut into streamed pieces
// (every cut of every example, one byte at a time too), so a marker split across pieces is
// never shown; a reply straight to its final channel; one cut inside its analysis; one that is
// no harmony at all; calls kept apart from both; a continued reply begun inside a channel.
#include <QtTest>

#include <string>
#include <vector>

#include "engine/chat/reasoning.h"

using namespace pagedchat;

namespace {

struct Split {
  std::string reasoning, content;
  std::vector<HarmonySplitter::Call> calls;
};

Split split(const std::vector<std::string>& pieces, HarmonySplitter::Start start = HarmonySplitter::Start::kHeader) {
  HarmonySplitter s(start);
  Split out;
  for (const std::string& p : pieces) {
    const ReasoningDelta d = s.push(p);
    out.reasoning += d.reasoning;
    out.content += d.content;
  }
  const ReasoningDelta d = s.finish();
  out.reasoning += d.reasoning;
  out.content += d.content;
  out.calls = s.calls();
  return out;
}

// The reply as one piece, as two at every cut, and byte by byte: all give `want`.
void checkEveryCut(const std::string& text, const Split& want, HarmonySplitter::Start start = HarmonySplitter::Start::kHeader) {
  auto same = [&](const Split& got, const char* how) {
    QVERIFY2(got.reasoning == want.reasoning, (std::string(how) + " reasoning: " + got.reasoning + " | " + text).c_str());
    QVERIFY2(got.content == want.content, (std::string(how) + " content: " + got.content + " | " + text).c_str());
    QCOMPARE(got.calls.size(), want.calls.size());
    for (size_t i = 0; i < got.calls.size(); ++i) {
      QCOMPARE(got.calls[i].recipient, want.calls[i].recipient);
      QCOMPARE(got.calls[i].body, want.calls[i].body);
      QCOMPARE(got.calls[i].ended, want.calls[i].ended);
    }
  };
  same(split({text}, start), "whole");
  for (size_t cut = 0; cut <= text.size(); ++cut) same(split({text.substr(0, cut), text.substr(cut)}, start), "two pieces");
  std::vector<std::string> bytes;
  for (char ch : text) bytes.push_back(std::string(1, ch));
  same(split(bytes, start), "byte by byte");
}

}  // namespace

class TestHarmonySplit : public QObject {
  Q_OBJECT
 private slots:
  void analysisThenFinal() {
    checkEveryCut("<|channel|>analysis<|message|>17 has no divisors but 1 and itself.<|end|>"
                  "<|start|>assistant<|channel|>final<|message|>Yes, 17 is prime.",
                  {"17 has no divisors but 1 and itself.", "Yes, 17 is prime.", {}});
    // <|return|> is in the text when special tokens are written out (a tool turn's reading).
    checkEveryCut("<|channel|>analysis<|message|>a < b<|end|><|start|>assistant<|channel|>final<|message|>x <| y<|return|>",
                  {"a < b", "x <| y", {}});
  }

  void straightToFinal() {
    checkEveryCut("<|channel|>final<|message|>Hello there.", {"", "Hello there.", {}});
  }

  void cutInsideTheAnalysis() {
    checkEveryCut("<|channel|>analysis<|message|>Let me think about <|en", {"Let me think about <|en", "", {}});
    // Cut inside the next header: it was markup, and is dropped.
    checkEveryCut("<|channel|>analysis<|message|>done<|end|><|start|>assistant<|chan", {"done", "", {}});
  }

  void aReplyThatIsNoHarmonyIsAllAnswer() {
    checkEveryCut("Just an answer.", {"", "Just an answer.", {}});
    checkEveryCut("<b>bold</b>", {"", "<b>bold</b>", {}});
    checkEveryCut("<|chan", {"", "<|chan", {}});  // only the start of a marker: text after all
    checkEveryCut(" tomorrow", {"", " tomorrow", {}});
  }

  void callsAreNeitherThinkingNorAnswer() {
    Split want{"Need the weather.", "", {{"functions.get_weather", R"({"city":"Paris"})", true}}};
    checkEveryCut("<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather "
                  R"(<|constrain|>json<|message|>{"city":"Paris"}<|call|>)",
                  want);
    // The recipient before the channel, as the template renders past calls; cut before <|call|>.
    want = {"", "", {{"functions.add", R"({"a": 1)", false}}};
    checkEveryCut(R"( to=functions.add<|channel|>commentary json<|message|>{"a": 1)", want);
    // A preamble (commentary to no one) is said to the user.
    want = {"", "Checking.", {{"functions.add", "{}", true}}};
    checkEveryCut("<|channel|>commentary<|message|>Checking.<|end|><|start|>assistant<|channel|>commentary to=functions.add "
                  "<|constrain|>json<|message|>{}<|call|>",
                  want);
  }

  void aStrayCommentaryBeforeTheChannelIsRead() {
    // gpt-oss-20b at times writes "<|channel|>commentary to=assistant" before its channel.
    checkEveryCut("<|channel|>commentary to=assistant<|channel|>analysis<|message|>hmm<|end|>"
                  "<|start|>assistant<|channel|>final<|message|>ok",
                  {"hmm", "ok", {}});
  }

  void aContinuedReplyBeginsInsideItsChannel() {
    checkEveryCut("more thought<|end|><|start|>assistant<|channel|>final<|message|>answer", {"more thought", "answer", {}},
                  HarmonySplitter::Start::kInAnalysis);
    checkEveryCut("the rest", {"", "the rest", {}}, HarmonySplitter::Start::kInFinal);
  }

  void thinkingIsSaidAsItComes() {
    ReasoningSplitter s = ReasoningSplitter::harmony();
    QCOMPARE(s.push("<|channel|>analysis<|mess").reasoning, std::string());
    QCOMPARE(s.push("age|>one two ").reasoning, std::string("one two "));
    const ReasoningDelta d = s.push("three<|e");
    QCOMPARE(d.reasoning, std::string("three"));  // the marker's beginning waits
    const ReasoningDelta e = s.push("nd|><|start|>assistant<|channel|>final<|message|>answer");
    QCOMPARE(e.reasoning, std::string());
    QCOMPARE(e.content, std::string("answer"));
  }

  void harmonyTemplatesAreKnownByTheirMarkup() {
    QVERIFY(template_is_harmony("{{- '<|start|>assistant<|channel|>final<|message|>' + message.content + '<|end|>' }}"));
    QVERIFY(!template_is_harmony("{% if x %}<think>{% endif %}</think>"));
    QVERIFY(!template_is_harmony("<|im_start|>{{ m.content }}<|im_end|>"));
  }
};

QTEST_APPLESS_MAIN(TestHarmonySplit)
#include "test_harmony_split.moc"
