// Each Jinja construct chat templates lean on, one snippet at a time, against Python's jinja2:
// tests/data/chat_templates/constructs.json (written by tests/reference/jinja_constructs_reference.py)
// holds jinja2's output or error for 357 snippets over one shared context: whitespace control,
// literals, Python's printing and arithmetic, precedence, scoping, loops, macros, every filter,
// test and method we support, and the errors.
//
// Where we differ on purpose, the case is named below with the reason; everything else must match
// byte for byte, and an error must be an error.

#include <QJsonArray>
#include <QtTest>

#include <map>

#include "engine/chat/jinja/jinja_template.h"
#include "support/jinja_json.h"
#include "support/test_env.h"

using namespace pagedchat;
using namespace pagedchat::jinja;

namespace {

// Cases where we fail on purpose although jinja2 renders.
const std::map<QString, const char*> kStricter = {
    // jinja2 checks a filter's or test's name only when a branch holding it runs (or at compile
    // time outside an if); we check every name when the template is parsed, so a template with a
    // filter we lack fails at load, where the fallback can be offered, not on some later turn.
    {"stmt_unknown_filter_untaken_if_ok", "unknown filter names are refused at parse time"},
    {"stmt_unknown_test_untaken_if_ok", "unknown test names are refused at parse time"},
    {"stmt_guarded_unknown_filter", "unknown filter names are refused at parse time"},
    // Python's integers are unbounded; ours stop at 64 bits with an error, never a wrong number.
    {"lit_big_int", "64-bit integers"},
    // Recursive loops (loop(children)) and dicts keyed by numbers or none: no chat template we
    // know uses them; both are refused by name.
    {"stmt_loop_recursive", "recursive loops are refused"},
    {"filter_tojson_tuple_and_int_keys", "dict keys are strings"},
};

// Cases we render differently, and why that cannot reach a prompt.
const std::map<QString, const char*> kPrintsDifferently = {
    // range() is a list here, and keys()/items() return lists: they iterate, index and measure
    // the same, only printing the object itself differs ("range(0, 3)", "dict_keys([...])").
    {"print_range", "range() is a list"},
    {"print_dict_views", "dict views are lists"},
    // With autoescape off (as Hugging Face renders) escape's Markup only differs when it is
    // then added to a plain string with '+'.
    {"filter_escape_markup_plus_vs_tilde", "no Markup type"},
};

}  // namespace

class TestJinjaConstructs : public QObject {
  Q_OBJECT
  QJsonObject data_;
  Dict context_;

 private slots:
  void initTestCase() {
    PC_REQUIRE_ENV(data, "PAGEDCHAT_TEST_DATA");
    data_ = test::read_json_object(QString::fromStdString(data) + "/chat_templates/constructs.json");
    const QJsonObject ctx = data_["context"].toObject();
    for (auto it = ctx.begin(); it != ctx.end(); ++it)
      context_.set(PromptText().markup(it.key().toStdString()), test::jinja_from_json(it.value()));
    QVERIFY(data_["cases"].toArray().size() >= 300);
  }

  void everySnippetRendersAsJinja2Does() {
    RenderOptions options;
    options.now = test::reference_clock;
    int matched = 0, failures = 0, differing = 0;
    QStringList report;
    for (const QJsonValue& cv : data_["cases"].toArray()) {
      const QJsonObject c = cv.toObject();
      const QString name = c["name"].toString();
      std::string got, error;
      try {
        got = Template::parse(c["template"].toString().toStdString()).render(context_, options).str();
      } catch (const Error& e) {
        error = e.what();
      }
      bool ok;
      if (kStricter.count(name)) ok = !error.empty();
      else if (kPrintsDifferently.count(name)) ok = error.empty() && got != c["output"].toString().toStdString();
      else if (c.contains("output")) ok = error.empty() && got == c["output"].toString().toStdString();
      else ok = !error.empty();
      if (ok) {
        (kStricter.count(name) || kPrintsDifferently.count(name) ? differing : matched) += 1;
        continue;
      }
      ++failures;
      report << name + ": " + c["template"].toString().left(160) + "\n   got:  " +
                    (error.empty() ? QString::fromStdString(got).left(200) : "error " + QString::fromStdString(error)) +
                    "\n   want: " + (c.contains("output") ? c["output"].toString().left(200) : "error " + c["error"].toString());
    }
    for (const QString& r : report) qInfo("%s", qPrintable(r));
    qInfo("%d of %d snippets as jinja2 has them, %d different as listed", matched, int(data_["cases"].toArray().size()), differing);
    QCOMPARE(failures, 0);
  }
};

QTEST_APPLESS_MAIN(TestJinjaConstructs)
#include "test_jinja_constructs.moc"
