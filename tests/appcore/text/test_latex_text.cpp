// LaTeX math as readable text: exact renderings of the commands models write, and which dollar
// signs open math (prices and code do not).

#include <QtTest>

#include <random>

#include "appcore/text/latex_text.h"

namespace {
// The Markdown with each math span shown as [display: text] or {inline: text}.
QString spans(const QString& markdown) {
  return replaceMath(markdown, [](const QString& tex, bool display) {
    return display ? QStringLiteral("[%1]").arg(latexToText(tex)) : QStringLiteral("{%1}").arg(latexToText(tex));
  });
}
}  // namespace

class TestLatexText : public QObject {
  Q_OBJECT
 private slots:
  void commandsBecomeUnicode_data() {
    QTest::addColumn<QString>("tex");
    QTest::addColumn<QString>("text");
    QTest::newRow("powers") << "x^2 + y^{10} = z^n" << "x² + y¹⁰ = zⁿ";
    QTest::newRow("no superscript glyph") << "e^{i\\pi} + 1 = 0" << "e^(iπ) + 1 = 0";
    QTest::newRow("subscripts") << "a_i + a_{12} + x_{max} + y_{big}" << "aᵢ + a₁₂ + xₘₐₓ + y_(big)";
    QTest::newRow("fraction") << "\\frac{1}{2} + \\frac{a+b}{c}" << "1/2 + (a+b)/c";
    QTest::newRow("roots") << "\\sqrt{2} \\sqrt{x+1} \\sqrt[3]{8}" << "√2 √(x+1) ∛8";
    QTest::newRow("greek and operators") << "\\alpha \\leq \\beta \\times \\Gamma \\neq \\infty" << "α ≤ β × Γ ≠ ∞";
    QTest::newRow("sum") << "\\sum_{i=1}^{n} i = \\frac{n(n+1)}{2}" << "∑ᵢ₌₁ⁿ i = (n(n+1))/2";
    QTest::newRow("sets") << "x \\in \\mathbb{R}, A \\subseteq B \\cup C" << "x ∈ ℝ, A ⊆ B ∪ C";
    QTest::newRow("text and functions") << "\\text{if } \\sin x \\to 0" << "if sin x → 0";
    QTest::newRow("spacing and delimiters") << "\\left( a \\, b \\right) \\{ c \\}" << "( a b ) { c }";
    QTest::newRow("unknown command") << "\\foo{x}" << "foox";
    QTest::newRow("matrix rows") << "\\begin{pmatrix} a & b \\\\ c & d \\end{pmatrix}" << "a b \n c d";
    QTest::newRow("binomial and mod") << "\\binom{n}{k} \\pmod{7}" << "C(n, k) (mod 7)";
    QTest::newRow("unbalanced") << "}{x^" << "x";
  }
  void commandsBecomeUnicode() {
    QFETCH(QString, tex);
    QFETCH(QString, text);
    QCOMPARE(latexToText(tex), text);
  }

  void whichDollarsAreMath() {
    QCOMPARE(spans(QStringLiteral("Area $\\pi r^2$ here")), QStringLiteral("Area {π r²} here"));
    QCOMPARE(spans(QStringLiteral("It costs $5 and $10 today")), QStringLiteral("It costs $5 and $10 today"));
    QCOMPARE(spans(QStringLiteral("a $ b $ c")), QStringLiteral("a $ b $ c"));  // spaces inside: not math
    QCOMPARE(spans(QStringLiteral("escaped \\$x$ stays")), QStringLiteral("escaped \\$x$ stays"));
    QCOMPARE(spans(QStringLiteral("$$E = mc^2$$")), QStringLiteral("[E = mc²]"));
    QCOMPARE(spans(QStringLiteral("so \\(a_1\\) and \\[\\frac{x}{y}\\]")), QStringLiteral("so {a₁} and [x/y]"));
    // Code keeps its dollars and backslashes.
    QCOMPARE(spans(QStringLiteral("run `echo $HOME$` now")), QStringLiteral("run `echo $HOME$` now"));
    QCOMPARE(spans(QStringLiteral("```sh\necho $a$\n```\nthen $x$")), QStringLiteral("```sh\necho $a$\n```\nthen {x}"));
    // Inline math does not run across lines.
    QCOMPARE(spans(QStringLiteral("$a\nb$")), QStringLiteral("$a\nb$"));
  }

  void randomTexNeverHangsOrCrashes() {
    const QStringList pieces{QStringLiteral("\\frac"), QStringLiteral("{"), QStringLiteral("}"), QStringLiteral("^"), QStringLiteral("_"),
                             QStringLiteral("\\sqrt"), QStringLiteral("["), QStringLiteral("]"), QStringLiteral("x"), QStringLiteral("\\"),
                             QStringLiteral("\\begin"), QStringLiteral("&"), QStringLiteral("$"), QStringLiteral(" "), QStringLiteral("\\text"),
                             QStringLiteral("\\mathbb"), QStringLiteral("2"), QStringLiteral("\\left("), QStringLiteral("`")};
    std::mt19937 rng(3);
    for (int round = 0; round < 5000; ++round) {
      QString tex;
      const int n = static_cast<int>(rng() % 30);
      for (int i = 0; i < n; ++i) tex += pieces[static_cast<int>(rng() % pieces.size())];
      latexToText(tex);
      spans(tex);
    }
  }
};

QTEST_GUILESS_MAIN(TestLatexText)
#include "test_latex_text.moc"
