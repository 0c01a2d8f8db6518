// gpt-oss's chat template (tests/data/chat_templates/templates/gpt-oss-120b.jinja) with our chat
// layer: known as harmony (not <think>) and its tool format as harmony's; an earlier reply goes
// back as its final channel only, a call's reply with its thinking (ChatMessage::reasoning, the
// template's `thinking`), and a reply whose content holds channel markup is refused by the
// template (why the app keeps harmony replies in its <think> form), and a reply in that form is
// reopened in its channel when continued; calls read back out of replies; a named call forced by
// its header in the prompt and its arguments' grammar.
#include <QtTest>

#include <memory>
#include <string>

#include "engine/chat/chat_template.h"
#include "engine/chat/tool_calls.h"
#include "engine/common/error.h"
#include "engine/grammar/gbnf.h"
#include "engine/grammar/grammar_matcher.h"
#include "support/test_env.h"

using namespace pagedchat;

namespace {

const char* const kTools = R"([{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
  "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "add", "description": "a + b", "parameters": {"type": "object",
  "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"], "additionalProperties": false}}}])";

bool sentence(const ToolSet::Grammar& g, const std::string& text) {
  grammar::GrammarMatcher m(std::make_shared<const grammar::Grammar>(grammar::parse_gbnf(g.gbnf, g.root)));
  return m.accept(text) && m.can_end();
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

class TestHarmonyTemplate : public QObject {
  Q_OBJECT
  std::unique_ptr<ChatTemplate> tmpl_;

 private slots:
  void initTestCase() {
    PC_REQUIRE_ENV(data, "PAGEDCHAT_TEST_DATA");
    QFile f(QString::fromStdString(data) + "/chat_templates/templates/gpt-oss-120b.jinja");
    QVERIFY(f.open(QIODevice::ReadOnly));
    tmpl_ = std::make_unique<ChatTemplate>(ChatTemplate::from_jinja(f.readAll().toStdString(), "<|startoftext|>", "<|return|>"));
  }

  void isKnownAsHarmony() {
    QVERIFY(tmpl_->harmony());
    QVERIFY(!tmpl_->thinks());
    QCOMPARE(tool_format_name(tmpl_->tool_format()), "harmony");
    QVERIFY(!ChatTemplate::from_jinja("{{ messages[0].content }}", "", "").harmony());
  }

  void anEarlierReplyGoesBackAsItsFinalChannel() {
    const std::string prompt = tmpl_->apply({{"user", "Is 17 prime?"},
                                             {"assistant", "Yes.", {}, {}, {}, "17 has no divisors."},
                                             {"user", "And 21?"}},
                                            true)
                                   .str();
    QVERIFY2(has(prompt, "<|start|>assistant<|channel|>final<|message|>Yes.<|end|><|start|>user<|message|>And 21?<|end|>"), prompt.c_str());
    QVERIFY(!has(prompt, "17 has no divisors"));  // the template drops an answered turn's thinking
    QVERIFY(prompt.ends_with("<|start|>assistant"));
  }

  void aCallsReplyKeepsItsThinking() {
    const ToolSet tools(kTools);
    ChatMessage call{"assistant", "Let me check.", {{"call_1", "get_weather", R"({"city":"Paris"})"}}, {}, {}, "Need the weather."};
    const std::vector<ChatMessage> chat = {{"user", "Weather in Paris?"}, call, {"tool", "sunny", {}, "call_1", "get_weather"}};
    // Until the turn answers, the model sees its thinking; the preamble gives way to it (the
    // template refuses both).
    const std::string prompt = tmpl_->apply(chat, true, &tools).str();
    QVERIFY2(has(prompt, "<|start|>assistant<|channel|>analysis<|message|>Need the weather.<|end|>"
                         "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>"),
             prompt.c_str());
    QVERIFY(has(prompt, "<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>\"sunny\"<|end|>"));
    QVERIFY(has(prompt, "type get_weather = (_: {"));
    // Once a later reply answers, the call's thinking is dropped.
    std::vector<ChatMessage> answered = chat;
    answered.push_back({"assistant", "Sunny."});
    answered.push_back({"user", "Thanks"});
    QVERIFY(!has(tmpl_->apply(answered, true, &tools).str(), "Need the weather."));
  }

  // OpenAI's API lets a function go without a description; the template writes it unguarded
  // ("// " + tool.description, an error in jinja2 too), so it gets an empty one: the prompt is
  // the one an explicit "" gives. A template that renders tools as given (Qwen 2.5's tojson)
  // still shows the client's JSON, no description added.
  void aFunctionWithoutADescriptionIsOffered() {
    const char* const bare = R"([{"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}}])";
    const char* const empty = R"([{"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}, "description": ""}}])";
    const std::vector<ChatMessage> chat = {{"user", "What time is it?"}};
    const ToolSet bare_tools(bare), empty_tools(empty);
    const std::string prompt = tmpl_->apply(chat, true, &bare_tools).str();
    QCOMPARE(prompt, tmpl_->apply(chat, true, &empty_tools).str());
    QVERIFY2(has(prompt, "type now = () => any;"), prompt.c_str());

    PC_REQUIRE_ENV(data, "PAGEDCHAT_TEST_DATA");
    QFile f(QString::fromStdString(data) + "/chat_templates/templates/qwen2.5-7b-instruct.jinja");
    QVERIFY(f.open(QIODevice::ReadOnly));
    const ChatTemplate qwen = ChatTemplate::from_jinja(f.readAll().toStdString(), "", "<|im_end|>");
    const std::string qwen_prompt = qwen.apply(chat, true, &bare_tools).str();
    QVERIFY2(has(qwen_prompt, R"("name": "now")") && !has(qwen_prompt, "description"), qwen_prompt.c_str());
  }

  // A reply continued where it was cut (ChatSession::plan_continue) from the app's <think> form:
  // the model goes on in its channel, the markup markup and the words text.
  void aContinuedReplyReopensItsChannel() {
    auto open = [&](const std::string& reply) {
      PromptText p;
      p.markup("<|start|>assistant");
      tmpl_->open_reply(p, reply);
      return p;
    };
    QCOMPARE(open("<think>\nHmm, let").str(), std::string("<|start|>assistant<|channel|>analysis<|message|>Hmm, let"));
    QCOMPARE(open("<think>\nX\n</think>\n\nHalf an").str(),
             std::string("<|start|>assistant<|channel|>analysis<|message|>X<|end|><|start|>assistant<|channel|>final<|message|>Half an"));
    const PromptText plain = open("Half <|end|>");
    QCOMPARE(plain.str(), std::string("<|start|>assistant<|channel|>final<|message|>Half <|end|>"));
    QCOMPARE(plain.markup_spans().size(), size_t(1));  // the reply's own words stay text
    PromptText chatml;
    ChatTemplate::chatml().open_reply(chatml, "<think>\nX");
    QVERIFY(chatml.markup_spans().empty());
  }

  void channelMarkupInAReplyIsRefused() {
    QVERIFY_THROWS_EXCEPTION(ChatTemplateError,
                             tmpl_->apply({{"user", "hi"},
                                           {"assistant", "<|channel|>analysis<|message|>x<|end|><|start|>assistant<|channel|>final<|message|>y"},
                                           {"user", "again"}},
                                          true));
  }

  void callsAreReadOutOfReplies() {
    ToolReply r = parse_tool_reply(ToolFormat::kHarmony,
                                   "<|channel|>analysis<|message|>Need it.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather "
                                   R"(<|constrain|>json<|message|>{"city": "Paris"})");
    QCOMPARE(r.content, std::string());
    QCOMPARE(r.calls.size(), size_t(1));
    QCOMPARE(r.calls[0].name, std::string("get_weather"));
    QCOMPARE(r.calls[0].arguments, std::string(R"({"city":"Paris"})"));
    QVERIFY(!r.broken_call);
    r = parse_tool_reply(ToolFormat::kHarmony, "<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final<|message|> 4 ");
    QCOMPARE(r.content, std::string("4"));
    QVERIFY(r.calls.empty());
    r = parse_tool_reply(ToolFormat::kHarmony, R"(<|channel|>commentary to=functions.add <|constrain|>json<|message|>{"a": 1, )");
    QVERIFY(r.calls.empty());
    QVERIFY(r.broken_call);  // cut by its length
    QCOMPARE(settled_content(ToolFormat::kHarmony, "any answer"), size_t(10));  // the reader keeps calls out of content
  }

  void aNamedCallIsForcedByItsHeader() {
    const ToolSet tools(kTools);
    ToolChoice named{ToolChoice::Mode::kNamed, "add", false};
    QCOMPARE(ToolSet::forced_prefix(ToolFormat::kHarmony, named), std::string("<|channel|>commentary to=functions.add <|constrain|>json<|message|>"));
    const ToolSet::Grammar g = tools.grammar(ToolFormat::kHarmony, named);
    QVERIFY(sentence(g, R"({"a": 1, "b": 2})"));
    QVERIFY(!sentence(g, R"({"city": "Paris"})"));
    QVERIFY(tools.grammar(ToolFormat::kHarmony, {}).gbnf.empty());  // auto: the model's own choice
    QVERIFY_THROWS_EXCEPTION(Error, tools.grammar(ToolFormat::kHarmony, {ToolChoice::Mode::kRequired, "", true}));
    // The prompt ends with the header, markup (its specials become tokens), after "<|start|>assistant".
    const ChatTemplate forced = tmpl_->with_tools(std::make_shared<const ToolSet>(kTools), named);
    const PromptText prompt = forced.apply({{"user", "1 + 2?"}}, true);
    QVERIFY(prompt.str().ends_with("<|start|>assistant<|channel|>commentary to=functions.add <|constrain|>json<|message|>"));
    QVERIFY(!prompt.markup_spans().empty());
    QCOMPARE(prompt.markup_spans().back().end, prompt.size());
    // The reply (its arguments) read with that header: a call.
    const ToolReply r = parse_tool_reply(ToolFormat::kHarmony, ToolSet::forced_prefix(ToolFormat::kHarmony, named) + R"({"a": 1, "b": 2})");
    QCOMPARE(r.calls.size(), size_t(1));
    QCOMPARE(r.calls[0].name, std::string("add"));
  }
};

QTEST_APPLESS_MAIN(TestHarmonyTemplate)
#include "test_harmony_template.moc"
