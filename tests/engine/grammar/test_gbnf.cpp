// GBNF read as llama.cpp's users write it: literals with escapes, classes with ranges and
// negation, groups, every repetition form (each checked by which counts it accepts), comments
// and alternatives over several lines inside parentheses; what it refuses, with the line and
// column (a syntax error, an undefined rule, a missing root, left recursion, an excessive
// count); and to_gbnf writing a grammar that reads back the same.
#include <QtTest>

#include <string>

#include "engine/common/error.h"
#include "engine/grammar/gbnf.h"
#include "engine/grammar/grammar_matcher.h"

using namespace pagedchat;
using namespace pagedchat::grammar;

namespace {

// Whether the whole of `text` is a sentence of the grammar.
bool whole(const std::string& gbnf, const std::string& text) {
  GrammarMatcher m(std::make_shared<const Grammar>(parse_gbnf(gbnf)));
  return m.accept(text) && m.can_end();
}

std::string refusal(const std::string& gbnf) {
  try {
    parse_gbnf(gbnf);
  } catch (const Error& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

class TestGbnf : public QObject {
  Q_OBJECT
 private slots:
  void literalsClassesAndGroups() {
    const std::string one_line = "root ::= \"say \" ( \"yes\" | \"no\" ) [.!]? tail\ntail ::= [^a-c\\x00-\\x1F] | \"\\t\\\"\\\\\\u00e9\"\n";
    QVERIFY(whole(one_line, "say yes!z"));
    QVERIFY(whole(one_line, "say noz"));
    QVERIFY(whole(one_line, "say no\t\"\\é"));
    QVERIFY(whole(one_line, "say yes中"));  // a negated class admits any other code point
    QVERIFY(!whole(one_line, "say yes!a"));
    QVERIFY(!whole(one_line, "say yes\x01"));
    QVERIFY(!whole(one_line, "say maybe"));
    QVERIFY(!whole(one_line, "say yes"));  // tail is missing
    // A rule's alternatives end with its line, outside parentheses.
    QCOMPARE(refusal("root ::= \"a\"\n  | \"b\""), std::string("GBNF line 2, column 3: expected a rule name"));
  }

  void repetitionsAcceptExactlyTheirCounts() {
    const std::pair<const char*, std::vector<int>> cases[] = {
        {"root ::= \"a\"*", {0, 1, 2, 3, 4, 5, 6, 7}}, {"root ::= \"a\"+", {1, 2, 3, 4, 5, 6, 7}}, {"root ::= \"a\"?", {0, 1}},
        {"root ::= \"a\"{3}", {3}},                   {"root ::= \"a\"{2,}", {2, 3, 4, 5, 6, 7}},  {"root ::= \"a\"{2,4}", {2, 3, 4}},
        {"root ::= \"a\"{0,2}", {0, 1, 2}},    {"root ::= (\"a\"){ 1 , 3 }", {1, 2, 3}},
    };
    for (const auto& [g, counts] : cases)
      for (int n = 0; n <= 7; ++n) {
        const bool expected = std::find(counts.begin(), counts.end(), n) != counts.end();
        QVERIFY2(whole(g, std::string(static_cast<size_t>(n), 'a')) == expected, qPrintable(QStringLiteral("%1 with %2 a").arg(g).arg(n)));
      }
    // A repeated group of several items and a repeated class.
    QVERIFY(whole("root ::= (\"ab\" [0-9])+ \".\"", "ab1ab2."));
    QVERIFY(!whole("root ::= (\"ab\" [0-9])+ \".\"", "ab1a2."));
    QVERIFY(whole("root ::= [0-9]{2,3} \"-\" .", "123-x"));
    QVERIFY(!whole("root ::= [0-9]{2,3} \"-\" .", "1234-x"));
  }

  void commentsAndLinesAsLlamaCppWritesThem() {
    const std::string g =
        "# a greeting\n"
        "root ::= greeting ( \",\" ws name\n"
        "          | \"!\" )   # inside parentheses a group goes on over lines\n"
        "\n"
        "greeting ::= \"hi\" | \"hello\"\n"
        "name-1_x ::= [A-Z] [a-z]*\n"
        "name ::= name-1_x\n"
        "ws ::= \" \"*\n";
    QVERIFY(whole(g, "hi, Ada"));
    QVERIFY(whole(g, "hello!"));
    QVERIFY(!whole(g, "hi, ada"));
  }

  void refusalsSayWhereAndWhy() {
    QCOMPARE(refusal("root ::= \"a\" b"), std::string("GBNF line 1, column 14: the rule 'b' is used but never defined"));
    QCOMPARE(refusal("start ::= \"a\""), std::string("GBNF: no rule 'root' (the grammar's start)"));
    QCOMPARE(refusal("root ::= \"a\"\nroot ::= \"b\""), std::string("GBNF line 2, column 1: the rule 'root' is defined twice"));
    QCOMPARE(refusal("root = \"a\""), std::string("GBNF line 1, column 6: expected '::=' after 'root'"));
    QCOMPARE(refusal("root ::= \"a"), std::string("GBNF line 1, column 12: a string literal is not closed"));
    QCOMPARE(refusal("root ::= [a"), std::string("GBNF line 1, column 12: a character class is not closed"));
    QCOMPARE(refusal("root ::= ( \"a\""), std::string("GBNF line 1, column 15: expected ')'"));
    QCOMPARE(refusal("root ::= * \"a\""), std::string("GBNF line 1, column 10: '*' repeats nothing"));
    QCOMPARE(refusal("root ::= \"a\"{3,2}"), std::string("GBNF line 1, column 18: {3,2}: the most is fewer than the least"));
    QCOMPARE(refusal("root ::= \"a\"{20000}"), std::string("GBNF line 1, column 14: a repetition count past 10000"));
    QCOMPARE(refusal("root ::= \"\\q\""), std::string("GBNF line 1, column 12: unknown escape '\\q'"));
    QCOMPARE(refusal("root ::= [z-a]"), std::string("GBNF line 1, column 14: a range that ends before it starts"));
    QCOMPARE(refusal("root ::= expr\nexpr ::= expr \"+\" \"1\" | \"1\""),
             std::string("GBNF: the rule 'expr' is left-recursive (expr -> expr): write it with a repetition instead"));
    QCOMPARE(refusal("root ::= a\na ::= b? \"x\" | \"y\"\nb ::= \"\" | a"),
             std::string("GBNF: the rule 'a' is left-recursive (a -> a_1 -> b -> a): write it with a repetition instead"));
  }

  void toGbnfReadsBackTheSame() {
    const std::string g = "root ::= \"{\" ( pair ( \",\" pair )* )? \"}\" [^\\x00-\\x1F\"]{0,3} .\npair ::= [a-zA-Z_] [a-z0-9]* \":\" [0-9]+\n";
    const std::string once = to_gbnf(parse_gbnf(g));
    // Written, it has no groups or repetitions left: read and written again, the same rules
    // under the same names (in the order they are first named in the text).
    const std::string twice = to_gbnf(parse_gbnf(once));
    const auto rules = [](const std::string& text) {
      QStringList lines = QString::fromStdString(text).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
      lines.sort();
      return lines;
    };
    QCOMPARE(rules(twice), rules(once));
    for (const char* text : {"{}x", "{a:1,b2:30}x", "{}ab\"x", "{a:1", "{}", "{a:1,}x"}) {
      QCOMPARE(whole(once, text), whole(g, text));
      QCOMPARE(whole(twice, text), whole(g, text));
    }
    QVERIFY(whole(g, "{a:1,b2:30}x") && !whole(g, "{a:1,}x"));
  }
};

QTEST_GUILESS_MAIN(TestGbnf)
#include "test_gbnf.moc"
