// A template we cannot render is an error that names the construct and its line, never a crash
// or a silent fallback: unsupported statements and filters at parse time, a template's own
// raise_exception and Python type errors at render time. A GGUF whose template we cannot parse
// loads with the built-in format and says why. Mutated and truncated real templates (a fuzz
// in miniature, run under the sanitizers too) parse or fail cleanly, and so do their renders.

#include <QFile>
#include <QtTest>

#include <chrono>
#include <cstring>
#include <random>

#include "engine/chat/chat_template.h"
#include "engine/chat/jinja/jinja_template.h"
#include "engine/gguf/gguf_file.h"
#include "support/gguf_builder.h"
#include "support/jinja_chat.h"
#include "support/test_env.h"

using namespace pagedchat;
using namespace pagedchat::jinja;

namespace {

std::string parse_error(const std::string& source) {
  try {
    Template::parse(source);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

Dict chat_context() {
  return test::jinja_chat_context({{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello"}, {"user", "Bye"}});
}

}  // namespace

class TestJinjaErrors : public QObject {
  Q_OBJECT

 private slots:
  void unsupportedConstructsAreNamedWithTheirLine() {
    QCOMPARE(QString::fromStdString(parse_error("a\n{% extends 'base.jinja' %}")),
             QStringLiteral("line 2: {% extends %} is not supported in chat templates here"));
    QCOMPARE(QString::fromStdString(parse_error("{% call(user) list_users() %}{{ user }}{% endcall %}")),
             QStringLiteral("line 1: {% call(args) %} with caller arguments is not supported"));
    QCOMPARE(QString::fromStdString(parse_error("{% include 'other.jinja' %}")),
             QStringLiteral("line 1: {% include %} is not supported in chat templates here"));
    QCOMPARE(QString::fromStdString(parse_error("\n\n{{ messages | wordwrap(20) }}")),
             QStringLiteral("line 3: the filter 'wordwrap' is not supported"));
    QCOMPARE(QString::fromStdString(parse_error("{% if x is prime %}{% endif %}")),
             QStringLiteral("line 1: the test 'prime' is not supported"));
    QCOMPARE(QString::fromStdString(parse_error("{% for m in messages recursive %}{% endfor %}")),
             QStringLiteral("line 1: recursive loops are not supported"));
    QCOMPARE(QString::fromStdString(parse_error("{% for m in messages %}{{ m }}")),
             QStringLiteral("line 1: {% for %} is never closed"));
    QCOMPARE(QString::fromStdString(parse_error("{{ 'open }}")), QStringLiteral("line 1: a '{{' tag is never closed"));
    QCOMPARE(QString::fromStdString(parse_error("{% endif %}")), QStringLiteral("line 1: unknown statement {% endif %}"));
  }

  void renderErrorsSayWhatAndWhere() {
    const Dict ctx = chat_context();
    auto render_error = [&](const std::string& src) -> std::string {
      try {
        Template::parse(src).render(ctx);
      } catch (const TemplateRaised& e) {
        return std::string("raised: ") + e.what();
      } catch (const Error& e) {
        return e.what();
      }
      return "";
    };
    QCOMPARE(QString::fromStdString(render_error("{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}")),
             QStringLiteral("raised: System role not supported"));
    QCOMPARE(QString::fromStdString(render_error("x\n{{ messages[0].content + 1 }}")),
             QStringLiteral("line 2: unsupported operand type(s) for +: 'str' and 'int'"));
    QCOMPARE(QString::fromStdString(render_error("{{ nothing.here }}")),
             QStringLiteral("line 1: 'nothing' is undefined (looking up .here)"));
    QCOMPARE(QString::fromStdString(render_error("{{ messages.append(1) }}")),
             QStringLiteral("line 1: the template changes a list with .append(), which the sandbox templates render in forbids"));
    QCOMPARE(QString::fromStdString(render_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}")),
             QStringLiteral("macro calls nested deeper than 256"));  // a budget: the whole render, no line
  }

  // The model's template refusing a conversation is a ChatTemplateError for the user, and the
  // built-in format is there to choose instead.
  void aRefusingTemplateIsAChatTemplateErrorWithTheBuiltinOffered() {
    const ChatTemplate t = ChatTemplate::from_jinja(
        "{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
        "<start_of_turn>{{ m['role'] }}\n{{ m['content'] }}<end_of_turn>\n{% endfor %}",
        "<bos>", "<eos>");
    QVERIFY(t.uses_model_template());
    QCOMPARE(t.style(), ChatTemplate::Style::kGemma);
    QCOMPARE(t.apply({{"user", "Hi"}}, false).str(), std::string("<start_of_turn>user\nHi<end_of_turn>\n"));
    try {
      t.apply({{"system", "Be brief."}, {"user", "Hi"}});
      QFAIL("the template should refuse a system message");
    } catch (const ChatTemplateError& e) {
      QCOMPARE(QString::fromStdString(e.what()),
               QStringLiteral("the model's chat template refuses this conversation: System role not supported"));
    }
    const ChatTemplate builtin = t.builtin();
    QVERIFY(!builtin.uses_model_template());
    QCOMPARE(QString::fromStdString(builtin.describe()), QStringLiteral("the built-in Gemma format"));
    QVERIFY(builtin.apply({{"system", "Be brief."}, {"user", "Hi"}}).str().find("Be brief.") != std::string::npos);
  }

  // A file whose template uses what we cannot parse loads with the built-in format recognised
  // from its markers, and says why.
  void aGgufTemplateWeCannotParseFallsBackAndSaysWhy() {
    test::GgufBuilder b;
    b.add_string("general.architecture", "llama");
    b.add_string("tokenizer.chat_template",
                 "{% import 'tools.jinja' as tools %}<|start_header_id|>user<|end_header_id|>\n\n{{ messages[0]['content'] }}");
    const std::vector<uint8_t> bytes = b.build();
    const ChatTemplate t = ChatTemplate::from_gguf(GgufFile::from_memory(bytes));
    QVERIFY(!t.uses_model_template());
    QCOMPARE(t.style(), ChatTemplate::Style::kLlama3);
    QCOMPARE(QString::fromStdString(t.fallback_reason()),
             QStringLiteral("its chat template cannot be rendered here (line 1: {% import %} is not supported in chat templates here)"));
    QCOMPARE(QString::fromStdString(t.describe()), QStringLiteral("the built-in Llama 3 format"));
  }

  // Parsing or rendering never crashes or hangs: every truncation of real templates and
  // thousands of byte mutations either work or throw Error.
  void mutatedTemplatesFailCleanly() {
    PC_REQUIRE_ENV(data, "PAGEDCHAT_TEST_DATA");
    const Dict ctx = chat_context();
    std::mt19937 rng(17);
    const char* kAlphabet = "{}%#-+|.[]()'\"=,:~ \nabcifendforsetmacro0123456789";
    int parsed = 0, rendered = 0, failed = 0;
    for (const char* name : {"llama-3.1-8b-instruct", "qwen3-0.6b", "gemma-3-1b-it", "smollm2-135m-instruct", "kimi-k2-instruct"}) {
      QFile f(QString::fromStdString(data) + "/chat_templates/templates/" + name + ".jinja");
      QVERIFY2(f.open(QIODevice::ReadOnly), name);
      const std::string src = f.readAll().toStdString();
      std::vector<std::string> variants;
      for (size_t cut = 0; cut < src.size(); cut += 7) variants.push_back(src.substr(0, cut));
      for (int i = 0; i < 600; ++i) {
        std::string m = src;
        const int edits = 1 + static_cast<int>(rng() % 4);
        for (int e = 0; e < edits; ++e) {
          const size_t at = rng() % m.size();
          switch (rng() % 3) {
            case 0: m[at] = kAlphabet[rng() % std::strlen(kAlphabet)]; break;
            case 1: m.erase(at, 1 + rng() % 8); break;
            default: m.insert(m.begin() + static_cast<std::ptrdiff_t>(at), kAlphabet[rng() % std::strlen(kAlphabet)]);
          }
          if (m.empty()) m.push_back('x');
        }
        variants.push_back(std::move(m));
      }
      for (const std::string& v : variants) {
        try {
          const Template t = Template::parse(v);
          ++parsed;
          t.render(ctx);
          ++rendered;
        } catch (const Error&) {
          ++failed;
        }
      }
    }
    qInfo("%d variants parsed, %d rendered, %d failed with an Error", parsed, rendered, failed);
    QVERIFY(parsed > 0 && failed > 0);
  }

  // Nesting deep enough to overflow the stack is refused by name instead.
  void deepNestingIsRefused() {
    std::string parens = "{{ ";
    parens.append(300, '(');
    parens += '1';
    parens.append(300, ')');
    parens += " }}";
    QVERIFY(parse_error(parens).find("nested deeper than") != std::string::npos);
    // A chain as long as a tag can hold builds a tree as deep: tags are bounded in tokens.
    std::string chain = "{{ 1";
    for (int i = 0; i < 100000; ++i) chain += " ~ 1";
    QCOMPARE(QString::fromStdString(parse_error(chain + " }}")), QStringLiteral("line 1: a tag of more than 2000 tokens"));
    std::string ifs;
    for (int i = 0; i < 20000; ++i) ifs += "{% if true %}";
    QVERIFY(parse_error(ifs).find("nested deeper than") != std::string::npos);
    std::string negs = "{{ ";
    negs.append(1000, '-');
    negs += "1 }}";
    QVERIFY(parse_error(negs).find("nested deeper than") != std::string::npos);
  }

  // A model file's template is untrusted code, rendered on every request: each of these once
  // pinned a core for good or allocated gigabytes (issue 46). Each must end within its budget,
  // with an Error that names the budget, quickly.
  void hostileTemplatesEndWithinTheirBudget_data() {
    QTest::addColumn<QString>("source");
    // "" renders (to nothing much). "the template ran ": past its steps, or past its 2 s where
    // each step is slow (under the sanitizers), whichever comes first.
    QTest::addColumn<QString>("error");
    QTest::newRow("empty string times 10^18") << "{{ '' * 1000000000000000000 }}" << "";
    QTest::newRow("empty list times 10^18") << "{{ ([] * 1000000000000000000) | length }}" << "";
    QTest::newRow("string times 10^18") << "{{ 'ab' * 1000000000000000000 }}" << "text grows past 16 MiB";
    QTest::newRow("nested ranges") << "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
                                   << "the template ran ";
    QTest::newRow("range overflowing 64 bits") << "{{ range(-9000000000000000000, 9000000000000000000) | length }}"
                                               << "range() of more than 100000 items";
    QTest::newRow("negative step overflowing") << "{{ range(9000000000000000000, -9000000000000000000, -1) | length }}"
                                               << "range() of more than 100000 items";
    QTest::newRow("2^40 macro calls")
        << "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}"
        << "the template ran ";
    QTest::newRow("center of 2e9") << "{{ 'x' | center(2000000000) }}" << "center() would pad with more than 4096 spaces";
    QTest::newRow("indent of 2e9") << "{{ 'a\nb' | indent(2000000000) }}" << "indent() width must be 0 to 4096";
    QTest::newRow("slow steps") << "{% set ns = namespace(s='x' * 8000000) %}{% for i in range(100000) %}"
                                   "{% set ns.t = ns.s ~ 'y' %}{% endfor %}"
                                << "ran for more than";
  }
  void hostileTemplatesEndWithinTheirBudget() {
    QFETCH(QString, source);
    QFETCH(QString, error);
    const auto t0 = std::chrono::steady_clock::now();
    std::string got;
    try {
      Template::parse(source.toStdString()).render(chat_context());
    } catch (const Error& e) {
      got = e.what();
    }
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (error.isEmpty()) QVERIFY2(got.empty(), got.c_str());
    else QVERIFY2(got.find(error.toStdString()) != std::string::npos, got.c_str());
    // The time limit is 2 s; sanitizers slow each step several times, not the clock's check.
    QVERIFY2(took < 6, std::to_string(took).c_str());
  }

  // A real conversation renders far inside the budget: a thousand messages.
  void aLongConversationIsWellInsideTheBudget() {
    std::vector<std::string> texts;
    for (int i = 0; i < 1000; ++i) texts.push_back("message " + std::to_string(i));
    std::vector<std::pair<const char*, const char*>> messages;
    for (int i = 0; i < 1000; ++i) messages.push_back({i % 2 ? "assistant" : "user", texts[i].c_str()});
    const Dict ctx = test::jinja_chat_context(messages);
    const std::string chatml = "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}";
    QVERIFY(Template::parse(chatml).render(ctx).str().find("message 999") != std::string::npos);
  }
};

QTEST_APPLESS_MAIN(TestJinjaErrors)
#include "test_jinja_errors.moc"
