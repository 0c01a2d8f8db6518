// A thinking model's reply split into thinking and answer (engine/chat/reasoning.h): the same split
// however the reply is cut into streamed pieces (every cut of every example, one byte at a time
// too), markers half written held back, a reply that does not think all answer, and prompts that
// open the thinking told from those that do not.
#include <QtTest>

#include <string>
#include <vector>

#include "engine/chat/reasoning.h"

using namespace pagedchat;

namespace {

struct Split {
  std::string reasoning, content;
};

Split split(const std::vector<std::string>& pieces, bool inside) {
  ReasoningSplitter s(inside);
  Split out;
  for (const std::string& p : pieces) {
    const auto d = s.push(p);
    out.reasoning += d.reasoning;
    out.content += d.content;
  }
  const auto d = s.finish();
  out.reasoning += d.reasoning;
  out.content += d.content;
  return out;
}

}  // namespace

class TestReasoningSplit : public QObject {
  Q_OBJECT
 private slots:
  void everyCutGivesTheSameSplit() {
    struct Case {
      std::string text;
      bool inside;
      std::string reasoning, content;
    };
    const Case cases[] = {
        {"<think>\nLet me see: 17 has no divisors.\n</think>\n\nYes, 17 is prime.", false, "\nLet me see: 17 has no divisors.\n", "Yes, 17 is prime."},
        {"  <think>a</think>b", false, "a", "b"},
        {"Hello there.", false, "", "Hello there."},
        {"<thinking is fun>", false, "", "<thinking is fun>"},
        {"first thoughts</think>\n\nThe answer.", true, "first thoughts", "The answer."},
        {"never closed <", true, "never closed <", ""},
        {"a < b </thi", true, "a < b </thi", ""},
        {"x</think>", true, "x", ""},
        {"<thi", false, "", "<thi"},
    };
    for (const Case& c : cases) {
      const Split whole = split({c.text}, c.inside);
      QCOMPARE(whole.reasoning, c.reasoning);
      QCOMPARE(whole.content, c.content);
      for (size_t cut = 0; cut <= c.text.size(); ++cut) {
        const Split two = split({c.text.substr(0, cut), c.text.substr(cut)}, c.inside);
        QCOMPARE(two.reasoning, c.reasoning);
        QCOMPARE(two.content, c.content);
      }
      std::vector<std::string> bytes;
      for (char ch : c.text) bytes.push_back(std::string(1, ch));
      const Split each = split(bytes, c.inside);
      QCOMPARE(each.reasoning, c.reasoning);
      QCOMPARE(each.content, c.content);
    }
  }

  void thinkingIsSaidAsItComes() {
    ReasoningSplitter s(true);
    QCOMPARE(s.push("one two ").reasoning, std::string("one two "));
    const auto d = s.push("three </th");
    QCOMPARE(d.reasoning, std::string("three "));  // the marker's beginning waits
    const auto e = s.push("ink>answer");
    QCOMPARE(e.reasoning, std::string());
    QCOMPARE(e.content, std::string("answer"));
  }

  void promptsThatOpenTheThinking() {
    QVERIFY(prompt_opens_thinking("<|Assistant|><think>\n"));
    QVERIFY(!prompt_opens_thinking("<|im_start|>assistant\n"));
    QVERIFY(!prompt_opens_thinking("<|im_start|>assistant\n<think>\n\n</think>\n\n"));  // Qwen 3 with thinking off
    QVERIFY(!prompt_opens_thinking("<think>x</think> later <think>"
                                   "opened but written into"));
    QVERIFY(template_thinks("{% if x %}<think>{% endif %}</think>"));
    QVERIFY(!template_thinks("{{ messages }}"));
  }
};

QTEST_APPLESS_MAIN(TestReasoningSplit)
#include "test_reasoning_split.moc"
