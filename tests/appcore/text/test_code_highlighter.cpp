// The code blocks' highlighter: exact token spans for the languages it knows, fence names
// mapped to them, nothing marked for one it does not know, and no span past the code or
// overlapping another on random input.

#include <QtTest>

#include <random>

#include "appcore/text/code_highlighter.h"

namespace {
using K = CodeTokenKind;
// The marked text of each token with its kind, in order: "kw:def", "str:'x'", ...
QStringList marked(const QString& language, const QString& code) {
  QStringList out;
  for (const CodeToken& t : highlightCode(language, code)) {
    const char* kind = t.kind == K::keyword ? "kw" : t.kind == K::string ? "str" : t.kind == K::comment ? "com" : t.kind == K::number ? "num" : "tag";
    out << QStringLiteral("%1:%2").arg(QLatin1String(kind), code.mid(t.start, t.length));
  }
  return out;
}
}  // namespace

class TestCodeHighlighter : public QObject {
  Q_OBJECT
 private slots:
  void fenceNamesMapToLanguages() {
    QCOMPARE(codeLanguage(QStringLiteral("py")), QStringLiteral("python"));
    QCOMPARE(codeLanguage(QStringLiteral("Python3")), QStringLiteral("python"));
    QCOMPARE(codeLanguage(QStringLiteral("c++")), QStringLiteral("cpp"));
    QCOMPARE(codeLanguage(QStringLiteral("bash title=run.sh")), QStringLiteral("shell"));
    QCOMPARE(codeLanguage(QStringLiteral("tsx")), QStringLiteral("typescript"));
    QCOMPARE(codeLanguage(QStringLiteral("brainfuck")), QString());
    QCOMPARE(codeLanguage(QString()), QString());
  }

  void python() {
    QCOMPARE(marked(QStringLiteral("python"), QStringLiteral("def f(x):\n    return x + 10  # ten\ns = 'it''s' \"\"\"doc\nstring\"\"\"")),
             (QStringList{QStringLiteral("kw:def"), QStringLiteral("kw:return"), QStringLiteral("num:10"), QStringLiteral("com:# ten"),
                          QStringLiteral("str:'it'"), QStringLiteral("str:'s'"), QStringLiteral("str:\"\"\"doc\nstring\"\"\"")}));
  }

  void cppCommentsStringsAndEscapes() {
    QCOMPARE(marked(QStringLiteral("cpp"), QStringLiteral("int main() { /* a\nb */ return printf(\"%d\\\"\\n\", 0x1F); } // end")),
             (QStringList{QStringLiteral("kw:int"), QStringLiteral("com:/* a\nb */"), QStringLiteral("kw:return"),
                          QStringLiteral("str:\"%d\\\"\\n\""), QStringLiteral("num:0x1F"), QStringLiteral("com:// end")}));
    // A name that holds a keyword or a digit is not marked.
    QCOMPARE(marked(QStringLiteral("cpp"), QStringLiteral("integer x2 = for_each;")), QStringList{});
  }

  void shellHashIsACommentOnlyWhereAWordStarts() {
    QCOMPARE(marked(QStringLiteral("shell"), QStringLiteral("echo $# files # count\nif [ -f a ]; then echo 'x'; fi")),
             (QStringList{QStringLiteral("kw:echo"), QStringLiteral("com:# count"), QStringLiteral("kw:if"), QStringLiteral("kw:then"),
                          QStringLiteral("kw:echo"), QStringLiteral("str:'x'"), QStringLiteral("kw:fi")}));
  }

  void jsonAndMarkup() {
    QCOMPARE(marked(QStringLiteral("json"), QStringLiteral("{\"a\": [1, true, null]}")),
             (QStringList{QStringLiteral("str:\"a\""), QStringLiteral("num:1"), QStringLiteral("kw:true"), QStringLiteral("kw:null")}));
    QCOMPARE(marked(QStringLiteral("html"), QStringLiteral("<div class=\"x\"><!-- c --></div>")),
             (QStringList{QStringLiteral("tag:<div"), QStringLiteral("str:\"x\""), QStringLiteral("com:<!-- c -->"), QStringLiteral("tag:</div")}));
  }

  void anUnclosedStringOrCommentEndsWithTheCode() {
    QCOMPARE(marked(QStringLiteral("javascript"), QStringLiteral("let s = `multi\nline")),
             (QStringList{QStringLiteral("kw:let"), QStringLiteral("str:`multi\nline")}));
    QCOMPARE(marked(QStringLiteral("c"), QStringLiteral("x /* open")), (QStringList{QStringLiteral("com:/* open")}));
  }

  void unknownLanguagesAreLeftPlain() { QVERIFY(highlightCode(QStringLiteral("cobol"), QStringLiteral("if x then y")).empty()); }

  void randomCodeGivesOrderedSpansInsideIt() {
    const QString alphabet = QStringLiteral("abif def for  \n\t\"'`#/*-<>!0123x._\\{}()é");
    std::mt19937 rng(5);
    const QStringList languages{QStringLiteral("python"), QStringLiteral("cpp"), QStringLiteral("shell"), QStringLiteral("sql"),
                                QStringLiteral("html"), QStringLiteral("json"), QStringLiteral("javascript"), QStringLiteral("yaml")};
    for (int round = 0; round < 3000; ++round) {
      QString code;
      const int n = static_cast<int>(rng() % 80);
      for (int i = 0; i < n; ++i) code += alphabet[static_cast<int>(rng() % alphabet.size())];
      int end = 0;
      for (const CodeToken& t : highlightCode(languages[round % languages.size()], code)) {
        QVERIFY2(t.start >= end && t.length > 0 && t.start + t.length <= code.size(), qPrintable(code));
        end = t.start + t.length;
      }
    }
  }
};

QTEST_GUILESS_MAIN(TestCodeHighlighter)
#include "test_code_highlighter.moc"
