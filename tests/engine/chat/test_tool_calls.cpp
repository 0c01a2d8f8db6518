// Tool calling through the model's own format (engine/chat/tool_calls.h): the format read from
// each real chat template's markers; the conversation with a call and its result rendered by
// ChatTemplate::apply exactly as Python's jinja2 renders it with Hugging Face's message shape
// (tests/data/chat_templates/expected.json, the tool_call conversation); replies parsed back
// into content and calls per format; the part of a streamed reply that is surely content; the
// grammar that forces a call admits exactly the calls of the offered functions; bad tools refused.
#include <QtTest>

#include <nlohmann/json.hpp>

#include <memory>
#include <random>
#include <string>

#include "engine/chat/chat_template.h"
#include "engine/chat/tool_calls.h"
#include "engine/common/error.h"
#include "engine/grammar/gbnf.h"
#include "engine/grammar/grammar_matcher.h"
#include "support/jinja_json.h"
#include "support/test_env.h"

using namespace pagedchat;

namespace {

const char* const kTools = R"([{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
  "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}, "unit": {"enum": ["c", "f"]}},
                 "required": ["city"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "add", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                 "required": ["a", "b"], "additionalProperties": false}}}])";

// Three ways of declaring no parameters, and an open map of integers (out here: moc misreads raw
// strings with unbalanced braces inside the class).
const char* const kToolsWithoutParameters = R"([{"type": "function", "function": {"name": "hang"}},
  {"type": "function", "function": {"name": "wait", "parameters": {"type": "object", "properties": {}}}},
  {"type": "function", "function": {"name": "nap", "parameters": {}}},
  {"type": "function", "function": {"name": "tag", "parameters": {"type": "object", "additionalProperties": {"type": "integer"}}}}])";
const char* const kNoArguments = "{}";
const char* const kSomeArguments = R"({"name":"hang"})";

bool sentence(const ToolSet::Grammar& g, const std::string& text) {
  grammar::GrammarMatcher m(std::make_shared<const grammar::Grammar>(grammar::parse_gbnf(g.gbnf, g.root)));
  return m.accept(text) && m.can_end();
}

std::string refusal(const char* tools) {
  try {
    ToolSet t(tools);
  } catch (const Error& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

class TestToolCalls : public QObject {
  Q_OBJECT
  QString dir_;
  QJsonObject expected_, sources_;

  std::string source_of(const QString& name) const {
    QFile f(dir_ + "/templates/" + name + ".jinja");
    if (!f.open(QIODevice::ReadOnly)) return {};
    return f.readAll().toStdString();
  }

 private slots:
  void initTestCase() {
    PC_REQUIRE_ENV(data, "PAGEDCHAT_TEST_DATA");
    dir_ = QString::fromStdString(data) + "/chat_templates";
    expected_ = test::read_json_object(dir_ + "/expected.json");
    sources_ = test::read_json_object(dir_ + "/sources.json");
  }

  void formatsAreReadFromTheTemplates() {
    const std::pair<const char*, ToolFormat> cases[] = {
        {"hermes-3-llama-3.1-8b-tool-use", ToolFormat::kHermes}, {"qwen2.5-7b-instruct", ToolFormat::kHermes},
        {"qwen3-0.6b", ToolFormat::kHermes},                     {"llama-3.1-8b-instruct", ToolFormat::kLlama3},
        {"llama-3.2-3b-instruct", ToolFormat::kLlama3},          {"mistral-nemo-instruct-2407", ToolFormat::kMistral},
        {"smollm2-135m-instruct", ToolFormat::kGeneric},         {"gemma-3-1b-it", ToolFormat::kGeneric},
    };
    for (const auto& [name, format] : cases) {
      const std::string source = source_of(name);
      QVERIFY2(!source.empty(), name);
      QCOMPARE(tool_format_name(tool_format_of(source)), tool_format_name(format));
    }
  }

  // Our message and tool shapes give the template what Hugging Face gives it: jinja2's bytes.
  void aCallAndItsResultRenderAsJinja2RendersThem() {
    const QJsonObject conv = expected_["conversations"].toObject()["tool_call"].toObject();
    const ToolSet tools(QJsonDocument(conv["tools"].toArray()).toJson(QJsonDocument::Compact).toStdString());
    std::vector<ChatMessage> messages;
    for (const QJsonValue& v : conv["messages"].toArray()) {
      const QJsonObject m = v.toObject();
      ChatMessage msg{m["role"].toString().toStdString(), m["content"].toString().toStdString()};
      for (const QJsonValue& c : m["tool_calls"].toArray()) {
        const QJsonObject f = c.toObject()["function"].toObject();
        msg.tool_calls.push_back({c.toObject()["id"].toString().toStdString(), f["name"].toString().toStdString(),
                                  QJsonDocument(f["arguments"].toObject()).toJson(QJsonDocument::Compact).toStdString()});
      }
      msg.tool_call_id = m["tool_call_id"].toString().toStdString();
      msg.name = m["name"].toString().toStdString();
      messages.push_back(msg);
    }
    int compared = 0;
    for (const QJsonValue& cv : expected_["cases"].toArray()) {
      const QJsonObject c = cv.toObject();
      if (c["conversation"].toString() != "tool_call") continue;
      const std::string source = source_of(c["template"].toString());
      // Templates that print today's date read the clock, which the reference fixed.
      if (tool_format_of(source) == ToolFormat::kGeneric || source.find("strftime_now") != std::string::npos) continue;
      const QJsonObject src = sources_[c["template"].toString()].toObject();
      const ChatTemplate t = ChatTemplate::from_jinja(source, src["bos_token"].toString().toStdString(), src["eos_token"].toString().toStdString());
      const QString name = c["template"].toString();
      try {
        const std::string got = t.apply(messages, c["add_generation_prompt"].toBool(), &tools).str();
        QVERIFY2(c.contains("output"), qPrintable(name + " rendered, jinja2 raised " + c["error"].toString()));
        QCOMPARE(QString::fromStdString(got), c["output"].toString());
      } catch (const ChatTemplateError& e) {
        QVERIFY2(!c.contains("output"), qPrintable(name + ": " + e.what()));
        QVERIFY2(std::string(e.what()).find(c["error"].toString().toStdString()) != std::string::npos, e.what());
      }
      ++compared;
    }
    QVERIFY2(compared >= 8, qPrintable(QString::number(compared)));
  }

  void repliesAreSplitIntoContentAndCalls() {
    ToolReply r = parse_tool_reply(ToolFormat::kHermes,
                                   "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
                                   "<tool_call>\n{\"name\": \"add\", \"arguments\": \"{\\\"a\\\": 1, \\\"b\\\": 2}\"}\n</tool_call>");
    QCOMPARE(r.content, std::string("Let me look."));
    QCOMPARE(r.calls.size(), size_t(2));
    QCOMPARE(r.calls[0].name, std::string("get_weather"));
    QCOMPARE(r.calls[0].arguments, std::string(R"({"city":"Paris"})"));
    QCOMPARE(r.calls[1].arguments, std::string(R"({"a":1,"b":2})"));  // arguments given as text are read too
    r = parse_tool_reply(ToolFormat::kHermes, "<tool_call>\nnot json\n</tool_call> ok");
    QVERIFY(r.calls.empty());
    QCOMPARE(r.content, std::string("<tool_call>\nnot json\n</tool_call> ok"));

    r = parse_tool_reply(ToolFormat::kLlama3, "<|python_tag|>{\"name\": \"add\", \"parameters\": {\"a\": 2, \"b\": 3}}");
    QCOMPARE(r.calls.size(), size_t(1));
    QCOMPARE(r.calls[0].arguments, std::string(R"({"a":2,"b":3})"));
    r = parse_tool_reply(ToolFormat::kLlama3, " {\"name\": \"add\", \"parameters\": {\"a\": 2, \"b\": 3}} ");
    QCOMPARE(r.calls.size(), size_t(1));
    QCOMPARE(parse_tool_reply(ToolFormat::kLlama3, "The answer is {5}.").content, std::string("The answer is {5}."));

    r = parse_tool_reply(ToolFormat::kMistral, "[TOOL_CALLS][{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 1}, \"id\": \"abcDEF123\"}]");
    QCOMPARE(r.calls.size(), size_t(1));
    QCOMPARE(r.calls[0].id, std::string("abcDEF123"));
    QCOMPARE(parse_tool_reply(ToolFormat::kMistral, "[{\"name\": \"add\", \"arguments\": {}}]").calls.size(), size_t(1));  // forced: the marker was the prompt's

    r = parse_tool_reply(ToolFormat::kGeneric, R"({"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]})");
    QCOMPARE(r.calls.size(), size_t(1));
    QVERIFY(r.content.empty());
    // A call cut short (its length limit) is a broken call; an answer cut short, what it said.
    QVERIFY(parse_tool_reply(ToolFormat::kGeneric, "{\"tool_calls\": [{\"name\": \"read_file\", \"arguments\": {\"path\": \"../../..").broken_call);
    QVERIFY(parse_tool_reply(ToolFormat::kHermes, "Sure.\n<tool_call>\n{\"name\": \"add\", \"argu").broken_call);
    QVERIFY(parse_tool_reply(ToolFormat::kMistral, "[TOOL_CALLS][{\"name\": ").broken_call);
    QVERIFY(parse_tool_reply(ToolFormat::kLlama3, "{\"name\": \"add\", \"param").broken_call);
    QVERIFY(!parse_tool_reply(ToolFormat::kHermes, "Just an answer.").broken_call);
    r = parse_tool_reply(ToolFormat::kGeneric, "{\"response\": \"Hello, wor");
    QVERIFY(!r.broken_call);
    QCOMPARE(r.content, std::string("Hello, wor"));
    r = parse_tool_reply(ToolFormat::kGeneric, R"({"response": "Hello there"})");
    QVERIFY(r.calls.empty());
    QCOMPARE(r.content, std::string("Hello there"));
  }

  void streamedContentStopsWhereACallMayBegin() {
    QCOMPARE(settled_content(ToolFormat::kHermes, "Sure. <tool"), size_t(6));
    QCOMPARE(settled_content(ToolFormat::kHermes, "Sure. <b>"), size_t(9));
    QCOMPARE(settled_content(ToolFormat::kHermes, "Sure.<tool_call>\n{"), size_t(5));
    QCOMPARE(settled_content(ToolFormat::kMistral, "Hi [TOOL_"), size_t(3));
    QCOMPARE(settled_content(ToolFormat::kLlama3, "  {\"name"), size_t(0));
    QCOMPARE(settled_content(ToolFormat::kLlama3, "<|pyth"), size_t(0));
    QCOMPARE(settled_content(ToolFormat::kLlama3, "Paris is sunny."), size_t(15));
    QCOMPARE(settled_content(ToolFormat::kGeneric, "{\"response\": \"x"), size_t(0));
  }

  // What a reader sees as a reply streams, at every byte of it: it only grows, it is a prefix
  // of the content parse_tool_reply finds in the whole reply, and, once the reply is whole, it
  // is that content (the generic format's JSON string decoded by nlohmann as the oracle).
  void streamedContentGrowsIntoTheParsedContent() {
    std::mt19937 rng(7);
    const std::vector<std::string> pieces = {"a", "Z", " ", "\n", "\"", "\\", "/", "\t", "é", "漢", "😀", "\x01", "{", "}", "<tool", "\\u"};
    for (int round = 0; round < 300; ++round) {
      std::string answer;
      const int n = static_cast<int>(rng() % 24);
      for (int i = 0; i < n; ++i) answer += pieces[rng() % pieces.size()];
      const bool asciiEscapes = rng() % 2;
      const std::string reply = std::string(rng() % 2 ? "{\"response\": " : "{ \"response\" :\n") +
                                nlohmann::json(answer).dump(-1, ' ', asciiEscapes) + "}";
      const std::string whole = parse_tool_reply(ToolFormat::kGeneric, reply).content;
      QCOMPARE(whole, answer);
      std::string before;
      for (size_t cut = 0; cut <= reply.size(); ++cut) {
        const std::string shown = streamed_content(ToolFormat::kGeneric, std::string_view(reply).substr(0, cut));
        QVERIFY2(shown.starts_with(before) && whole.starts_with(shown), reply.c_str());
        before = shown;
      }
      QCOMPARE(before, whole);
    }
    // Hermes: the text before a call, never the call.
    const std::string hermes = "  Let me look.\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>";
    const std::string content = parse_tool_reply(ToolFormat::kHermes, hermes).content;
    std::string before;
    for (size_t cut = 0; cut <= hermes.size(); ++cut) {
      const std::string shown = streamed_content(ToolFormat::kHermes, std::string_view(hermes).substr(0, cut));
      QVERIFY(shown.starts_with(before));
      QVERIFY2(content.starts_with(shown.substr(0, std::min(shown.size(), content.size()))), shown.c_str());
      before = shown;
    }
    QCOMPARE(streamed_content(ToolFormat::kGeneric, R"({"tool_calls": [{"name": "add")"), std::string());
  }

  void forcedCallsAreExactlyTheOfferedFunctions() {
    const ToolSet tools(kTools);
    ToolChoice required{ToolChoice::Mode::kRequired, "", true};
    const std::string weather = R"({"name": "get_weather", "arguments": {"city": "Oslo", "unit": "c"}})";
    const std::string add = R"({"name": "add", "arguments": {"a": 1, "b": 2}})";
    auto hermes = tools.grammar(ToolFormat::kHermes, required);
    QVERIFY(sentence(hermes, "<tool_call>\n" + weather + "\n</tool_call>"));
    QVERIFY(sentence(hermes, "<tool_call>\n" + weather + "\n</tool_call>\n<tool_call>\n" + add + "\n</tool_call>"));
    QVERIFY(!sentence(hermes, "Hello"));
    QVERIFY(!sentence(hermes, "<tool_call>\n{\"name\": \"delete_all\", \"arguments\": {}}\n</tool_call>"));
    QVERIFY(!sentence(hermes, "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1}}\n</tool_call>"));  // b is required
    ToolChoice one = required;
    one.parallel = false;
    QVERIFY(!sentence(tools.grammar(ToolFormat::kHermes, one), "<tool_call>\n" + weather + "\n</tool_call>\n<tool_call>\n" + add + "\n</tool_call>"));
    ToolChoice named{ToolChoice::Mode::kNamed, "add", true};
    QVERIFY(sentence(tools.grammar(ToolFormat::kHermes, named), "<tool_call>\n" + add + "\n</tool_call>"));
    QVERIFY(!sentence(tools.grammar(ToolFormat::kHermes, named), "<tool_call>\n" + weather + "\n</tool_call>"));
    QVERIFY(sentence(tools.grammar(ToolFormat::kLlama3, required), R"({"name": "add", "parameters": {"a": 1, "b": 2}})"));
    QVERIFY(sentence(tools.grammar(ToolFormat::kMistral, required), "[" + add + ", " + weather + "]"));
    QCOMPARE(ToolSet::forced_prefix(ToolFormat::kMistral, required), std::string("[TOOL_CALLS]"));
    // Generic: auto admits an answer or calls; required only calls. Auto in a model's own format is free.
    const auto generic_auto = tools.grammar(ToolFormat::kGeneric, ToolChoice{});
    // Compact, as nlohmann's dump() writes it back into later prompts: no whitespace at all.
    QVERIFY(sentence(generic_auto, R"({"response":"It is sunny."})"));
    QVERIFY(!sentence(generic_auto, R"({"response": "It is sunny."})"));
    const std::string compact_add = R"({"name":"add","arguments":{"a":1,"b":2}})";
    QVERIFY(sentence(generic_auto, R"({"tool_calls":[)" + compact_add + "]}"));
    QCOMPARE(nlohmann::ordered_json::parse(compact_add).dump(), compact_add);
    QVERIFY(!sentence(tools.grammar(ToolFormat::kGeneric, required), R"({"response":"It is sunny."})"));
    QVERIFY(tools.grammar(ToolFormat::kHermes, ToolChoice{}).gbnf.empty());
    // A named function that is not offered, and parameters outside the schema subset.
    QVERIFY_THROWS_EXCEPTION(Error, tools.grammar(ToolFormat::kHermes, ToolChoice{ToolChoice::Mode::kNamed, "nope", true}));
    const ToolSet patterned(R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"s": {"type": "string", "pattern": "a+"}}}}}])");
    try {
      patterned.grammar(ToolFormat::kGeneric, required);
      QFAIL("a pattern was accepted");
    } catch (const Error& e) {
      QVERIFY2(std::string(e.what()).find("tool 'f'") != std::string::npos && std::string(e.what()).find("pattern") != std::string::npos, e.what());
    }
  }

  // A function without parameters is called with {}: its arguments cannot grow without end
  // (SmolLM2 nested calls into an open object until max_tokens). Declared open maps stay open.
  void aFunctionWithoutParametersIsCalledWithAnEmptyObject() {
    const ToolSet tools(kToolsWithoutParameters);
    const ToolChoice required{ToolChoice::Mode::kRequired, "", true};
    for (const char* name : {"hang", "wait", "nap"}) {
      const std::string call = std::string("{\"name\":\"") + name + "\",\"arguments\":";
      for (ToolFormat format : {ToolFormat::kGeneric, ToolFormat::kHermes}) {
        const auto g = tools.grammar(format, required);
        const auto wrapped = [&](const std::string& args) {
          return format == ToolFormat::kGeneric ? "{\"tool_calls\":[" + call + args + "}]}"
                                                : "<tool_call>\n" + call + args + "}\n</tool_call>";
        };
        QVERIFY2(sentence(g, wrapped(kNoArguments)), name);
        QVERIFY2(!sentence(g, wrapped(kSomeArguments)), name);
      }
      const auto harmony = tools.grammar(ToolFormat::kHarmony, ToolChoice{ToolChoice::Mode::kNamed, name, true});
      QVERIFY2(sentence(harmony, kNoArguments) && !sentence(harmony, kSomeArguments), name);
    }
    const auto tag = tools.grammar(ToolFormat::kGeneric, ToolChoice{ToolChoice::Mode::kNamed, "tag", true});
    QVERIFY(sentence(tag, "{\"tool_calls\":[{\"name\":\"tag\",\"arguments\":{\"a\":1,\"b\":2}}]}"));
    QVERIFY(!sentence(tag, "{\"tool_calls\":[{\"name\":\"tag\",\"arguments\":{\"a\":\"x\"}}]}"));
  }

  void badToolsAreRefusedByEntry() {
    QVERIFY(refusal("{}").find("array") != std::string::npos);
    QVERIFY(refusal("[]").find("empty") != std::string::npos);
    QVERIFY(refusal(R"([{"type": "code_interpreter"}])").find("tools[0].type") != std::string::npos);
    QVERIFY(refusal(R"([{"type": "function", "function": {"name": "a b"}}])").find("tools[0].function.name") != std::string::npos);
    QVERIFY(refusal(R"([{"function": {"name": "f"}}, {"function": {"name": "f"}}])").find("twice") != std::string::npos);
    QVERIFY(refusal(R"([{"function": {"name": "f", "parameters": 3}}])").find("parameters") != std::string::npos);
    QCOMPARE(refusal(R"([{"type": "function", "function": {"name": "f"}}])"), std::string("accepted"));
  }

  // A template that does not render tools gets them in its system message, and the history in
  // the reply format.
  void theGenericWayWritesToolsIntoTheConversation() {
    const ToolSet tools(kTools);
    std::vector<ChatMessage> chat{{"user", "Add 1 and 2."}, {"assistant", "", {{"call_1", "add", R"({"a":1,"b":2})"}}},
                                  {"tool", "3", {}, "call_1", "add"}, {"assistant", "It is 3."}};
    const std::vector<ChatMessage> out = generic_tool_messages(chat, tools);
    QCOMPARE(out.size(), size_t(5));
    QCOMPARE(out[0].role, std::string("system"));
    QVERIFY(out[0].content.find("get_weather") != std::string::npos && out[0].content.find("\"response\"") != std::string::npos);
    QCOMPARE(out[2].content, std::string(R"({"tool_calls":[{"name":"add","arguments":{"a":1,"b":2}}]})"));
    QCOMPARE(out[3].role, std::string("user"));
    QCOMPARE(out[3].content, std::string(R"({"tool_response":{"id":"call_1","name":"add","content":"3"}})"));
    QCOMPARE(out[4].content, std::string(R"({"response":"It is 3."})"));
    const std::string rendered = ChatTemplate::chatml().apply(chat, true, &tools).str();
    QVERIFY(rendered.find("You can call these tools") != std::string::npos);
  }
};

QTEST_GUILESS_MAIN(TestToolCalls)
#include "test_tool_calls.moc"
