// A small recursive reader of TeX math: a command, a group in braces, ^ and _, or a character.
#include "appcore/text/latex_text.h"

#include <QHash>

namespace {

const QHash<QString, QString>& symbols() {
  static const QHash<QString, QString> s = [] {
    QHash<QString, QString> m;
    const char* greek[][2] = {{"alpha", "α"}, {"beta", "β"}, {"gamma", "γ"}, {"delta", "δ"}, {"epsilon", "ε"},
                              {"varepsilon", "ε"}, {"zeta", "ζ"}, {"eta", "η"}, {"theta", "θ"}, {"vartheta", "ϑ"},
                              {"iota", "ι"}, {"kappa", "κ"}, {"lambda", "λ"}, {"mu", "μ"}, {"nu", "ν"}, {"xi", "ξ"},
                              {"pi", "π"}, {"varpi", "ϖ"}, {"rho", "ρ"}, {"sigma", "σ"}, {"tau", "τ"}, {"upsilon", "υ"},
                              {"phi", "φ"}, {"varphi", "φ"}, {"chi", "χ"}, {"psi", "ψ"}, {"omega", "ω"},
                              {"Gamma", "Γ"}, {"Delta", "Δ"}, {"Theta", "Θ"}, {"Lambda", "Λ"}, {"Xi", "Ξ"}, {"Pi", "Π"},
                              {"Sigma", "Σ"}, {"Upsilon", "Υ"}, {"Phi", "Φ"}, {"Psi", "Ψ"}, {"Omega", "Ω"}};
    for (const auto& g : greek) m.insert(QString::fromUtf8(g[0]), QString::fromUtf8(g[1]));
    const char* ops[][2] = {
        {"times", "×"}, {"cdot", "·"}, {"pm", "±"}, {"mp", "∓"}, {"div", "÷"}, {"leq", "≤"}, {"le", "≤"},
        {"geq", "≥"}, {"ge", "≥"}, {"neq", "≠"}, {"ne", "≠"}, {"approx", "≈"}, {"equiv", "≡"}, {"sim", "∼"},
        {"simeq", "≃"}, {"cong", "≅"}, {"propto", "∝"}, {"infty", "∞"}, {"partial", "∂"}, {"nabla", "∇"},
        {"sum", "∑"}, {"prod", "∏"}, {"int", "∫"}, {"iint", "∬"}, {"oint", "∮"}, {"in", "∈"}, {"notin", "∉"},
        {"ni", "∋"}, {"subset", "⊂"}, {"subseteq", "⊆"}, {"supset", "⊃"}, {"supseteq", "⊇"}, {"cup", "∪"},
        {"cap", "∩"}, {"emptyset", "∅"}, {"varnothing", "∅"}, {"forall", "∀"}, {"exists", "∃"}, {"neg", "¬"},
        {"lnot", "¬"}, {"land", "∧"}, {"wedge", "∧"}, {"lor", "∨"}, {"vee", "∨"}, {"oplus", "⊕"}, {"otimes", "⊗"},
        {"to", "→"}, {"rightarrow", "→"}, {"leftarrow", "←"}, {"gets", "←"}, {"Rightarrow", "⇒"},
        {"Leftarrow", "⇐"}, {"implies", "⇒"}, {"iff", "⇔"}, {"Leftrightarrow", "⇔"}, {"leftrightarrow", "↔"},
        {"mapsto", "↦"}, {"uparrow", "↑"}, {"downarrow", "↓"}, {"ldots", "…"}, {"dots", "…"}, {"cdots", "⋯"},
        {"vdots", "⋮"}, {"ddots", "⋱"}, {"prime", "′"}, {"circ", "∘"}, {"bullet", "•"}, {"star", "⋆"},
        {"degree", "°"}, {"angle", "∠"}, {"perp", "⊥"}, {"parallel", "∥"}, {"mid", "∣"}, {"langle", "⟨"},
        {"rangle", "⟩"}, {"lfloor", "⌊"}, {"rfloor", "⌋"}, {"lceil", "⌈"}, {"rceil", "⌉"}, {"hbar", "ℏ"},
        {"ell", "ℓ"}, {"Re", "ℜ"}, {"Im", "ℑ"}, {"aleph", "ℵ"}, {"ll", "≪"}, {"gg", "≫"}, {"setminus", "∖"},
        {"triangle", "△"}, {"square", "□"}, {"checkmark", "✓"}, {"dagger", "†"}, {"therefore", "∴"},
        {"because", "∵"}, {"lbrace", "{"}, {"rbrace", "}"}, {"vert", "|"}, {"Vert", "‖"}, {"|", "‖"},
        {"{", "{"}, {"}", "}"}, {"%", "%"}, {"$", "$"}, {"&", "&"}, {"#", "#"}, {"_", "_"},
        {",", " "}, {";", " "}, {":", " "}, {"!", ""}, {" ", " "}, {"quad", "  "}, {"qquad", "    "},
        {"\\", "\n"}, {"left", ""}, {"right", ""}, {"big", ""}, {"Big", ""}, {"bigg", ""}, {"Bigg", ""},
        {"displaystyle", ""}, {"limits", ""}, {"nolimits", ""}};
    for (const auto& o : ops) m.insert(QString::fromUtf8(o[0]), QString::fromUtf8(o[1]));
    // Function names stay words.
    for (const char* f : {"sin", "cos", "tan", "cot", "sec", "csc", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
                          "log", "ln", "lg", "exp", "lim", "limsup", "liminf", "max", "min", "sup", "inf", "det", "dim",
                          "ker", "deg", "gcd", "arg", "Pr", "mod", "bmod"})
      m.insert(QString::fromLatin1(f), QString::fromLatin1(f));
    m.insert(QStringLiteral("pmod"), QString());  // takes its argument below
    return m;
  }();
  return s;
}

const QHash<QChar, QChar>& superscripts() {
  static const QHash<QChar, QChar> m = [] {
    QHash<QChar, QChar> h;
    const QString from = QStringLiteral("0123456789+-=()niaetx"), to = QString::fromUtf8("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱᵃᵉᵗˣ");
    for (int i = 0; i < from.size(); ++i) h.insert(from[i], to[i]);
    h.insert(QChar(0x2032), QChar(0x2032));  // x^\prime
    return h;
  }();
  return m;
}

const QHash<QChar, QChar>& subscripts() {
  static const QHash<QChar, QChar> m = [] {
    QHash<QChar, QChar> h;
    const QString from = QStringLiteral("0123456789+-=()aeoxhklmnpstijruv"), to = QString::fromUtf8("₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₒₓₕₖₗₘₙₚₛₜᵢⱼᵣᵤᵥ");
    for (int i = 0; i < from.size(); ++i) h.insert(from[i], to[i]);
    return h;
  }();
  return m;
}

const QHash<QString, QString>& blackboard() {
  static const QHash<QString, QString> m{{QStringLiteral("R"), QStringLiteral("ℝ")}, {QStringLiteral("N"), QStringLiteral("ℕ")},
                                         {QStringLiteral("Z"), QStringLiteral("ℤ")}, {QStringLiteral("Q"), QStringLiteral("ℚ")},
                                         {QStringLiteral("C"), QStringLiteral("ℂ")}, {QStringLiteral("P"), QStringLiteral("ℙ")}};
  return m;
}

class Reader {
 public:
  explicit Reader(const QString& tex) : m_s(tex) {}
  QString all() {
    QString out;
    while (m_i < m_s.size()) out += next();
    return out;
  }

 private:
  // One unit: a command with its arguments, a group, a script, or a character.
  QString next() {
    const QChar c = m_s[m_i];
    if (c == QLatin1Char('{')) return group();
    if (c == QLatin1Char('}')) {  // unbalanced: dropped
      ++m_i;
      return {};
    }
    if (c == QLatin1Char('^') || c == QLatin1Char('_')) {
      ++m_i;
      return script(argument(), c == QLatin1Char('^') ? superscripts() : subscripts(), c);
    }
    if (c == QLatin1Char('\\')) return command();
    if (c == QLatin1Char('&')) {  // a column of an aligned environment
      ++m_i;
      return QStringLiteral(" ");
    }
    if (c == QLatin1Char('~')) {
      ++m_i;
      return QStringLiteral(" ");
    }
    ++m_i;
    return QString(c);
  }

  QString group() {
    ++m_i;  // {
    QString out;
    while (m_i < m_s.size() && m_s[m_i] != QLatin1Char('}')) out += next();
    if (m_i < m_s.size()) ++m_i;  // }
    return out;
  }

  // A command's or a script's argument: a group, a command, or one character.
  QString argument() {
    while (m_i < m_s.size() && m_s[m_i] == QLatin1Char(' ')) ++m_i;
    if (m_i >= m_s.size()) return {};
    if (m_s[m_i] == QLatin1Char('{')) return group();
    if (m_s[m_i] == QLatin1Char('\\')) return command();
    return QString(m_s[m_i++]);
  }

  QString optionalArgument() {
    if (m_i >= m_s.size() || m_s[m_i] != QLatin1Char('[')) return {};
    const qsizetype end = m_s.indexOf(QLatin1Char(']'), m_i);
    if (end < 0) return {};
    const QString inside = Reader(m_s.mid(m_i + 1, end - m_i - 1)).all();
    m_i = static_cast<int>(end) + 1;
    return inside;
  }

  static bool isAtom(const QString& s) {
    // One symbol or a plain number or word needs no parentheses: a/b, 2/x, but (a+b)/(c+d).
    if (s.size() <= 1) return true;
    for (QChar c : s)
      if (!c.isLetterOrNumber() && c != QLatin1Char('.')) return false;
    return true;
  }
  static QString wrap(const QString& s) { return isAtom(s) ? s : QStringLiteral("(%1)").arg(s); }

  static QString script(const QString& text, const QHash<QChar, QChar>& table, QChar mark) {
    QString out;
    for (QChar c : text) {
      const auto it = table.find(c);
      // x^(iπ) where Unicode has no glyphs for them all.
      if (it == table.end()) return QStringLiteral("%1%2").arg(mark, text.size() == 1 ? text : QStringLiteral("(%1)").arg(text));
      out += *it;
    }
    return out;
  }

  QString command() {
    ++m_i;  // backslash
    if (m_i >= m_s.size()) return {};
    int end = m_i;
    if (m_s[m_i].isLetter())
      while (end < m_s.size() && m_s[end].isLetter()) ++end;
    else
      ++end;  // \{ \, \\ ...
    const QString name = m_s.mid(m_i, end - m_i);
    m_i = end;
    if (name == QLatin1String("frac") || name == QLatin1String("dfrac") || name == QLatin1String("tfrac")) {
      const QString a = argument(), b = argument();
      return QStringLiteral("%1/%2").arg(wrap(a), wrap(b));
    }
    if (name == QLatin1String("sqrt")) {
      const QString degree = optionalArgument();
      const QString radicand = argument();
      QString root = QString::fromUtf8("√");
      if (degree == QLatin1String("3")) root = QString::fromUtf8("∛");
      else if (degree == QLatin1String("4")) root = QString::fromUtf8("∜");
      else if (!degree.isEmpty()) root = script(degree, superscripts(), QLatin1Char('^')) + root;
      return root + wrap(radicand);
    }
    if (name == QLatin1String("mathbb")) {
      const QString letter = argument();
      return blackboard().value(letter, letter);
    }
    if (name == QLatin1String("text") || name == QLatin1String("mathrm") || name == QLatin1String("mathbf") ||
        name == QLatin1String("mathit") || name == QLatin1String("mathcal") || name == QLatin1String("mathsf") ||
        name == QLatin1String("mathtt") || name == QLatin1String("operatorname") || name == QLatin1String("textbf") ||
        name == QLatin1String("textit") || name == QLatin1String("boldsymbol") || name == QLatin1String("mbox"))
      return argument();
    if (name == QLatin1String("binom")) {
      const QString n = argument(), k = argument();
      return QStringLiteral("C(%1, %2)").arg(n, k);
    }
    if (name == QLatin1String("pmod")) return QStringLiteral(" (mod %1)").arg(argument());
    if (name == QLatin1String("vec")) return argument() + QString::fromUtf8("⃗");
    if (name == QLatin1String("hat")) return argument() + QString::fromUtf8("̂");
    if (name == QLatin1String("bar") || name == QLatin1String("overline")) return argument() + QString::fromUtf8("̄");
    if (name == QLatin1String("dot")) return argument() + QString::fromUtf8("̇");
    if (name == QLatin1String("tilde")) return argument() + QString::fromUtf8("̃");
    if (name == QLatin1String("begin") || name == QLatin1String("end")) {
      argument();  // the environment's name: its rows read as lines, its columns as spaces
      if (name == QLatin1String("begin") && m_i < m_s.size() && m_s[m_i] == QLatin1Char('{')) argument();  // {cc}
      return {};
    }
    const auto it = symbols().find(name);
    if (it != symbols().end()) {
      // A word-like symbol (sin, log) keeps a space from a letter that follows.
      if (!it->isEmpty() && it->back().isLetter() && m_i < m_s.size() && m_s[m_i].isLetter()) return *it + QLatin1Char(' ');
      return *it;
    }
    return name;  // unknown: its name, without the backslash
  }

  const QString& m_s;
  int m_i = 0;
};

}  // namespace

QString latexToText(const QString& tex) {
  QString out = Reader(tex).all().trimmed();
  // Spaces TeX ignores: "a = b" stays; runs collapse.
  QString tidy;
  for (QChar c : out) {
    if (c == QLatin1Char(' ') && tidy.endsWith(QLatin1Char(' '))) continue;
    tidy += c;
  }
  return tidy;
}

namespace latex_detail {

int codeAt(const QString& s, int i) {
  if (s[i] != QLatin1Char('`')) return 0;
  int ticks = 0;
  while (i + ticks < s.size() && s[i + ticks] == QLatin1Char('`')) ++ticks;
  const QString fence(ticks, QLatin1Char('`'));
  const bool lineStart = i == 0 || s[i - 1] == QLatin1Char('\n');
  if (ticks >= 3 && lineStart) {  // a fenced block: to the closing fence (or the end)
    const qsizetype close = s.indexOf(QLatin1Char('\n') + fence, i + ticks);
    return close < 0 ? static_cast<int>(s.size()) - i : static_cast<int>(close) + 1 + ticks - i;
  }
  const qsizetype close = s.indexOf(fence, i + ticks);
  return close < 0 ? ticks : static_cast<int>(close) + ticks - i;
}

int mathSpanAt(const QString& s, int i, bool* display, int* innerStart, int* innerLength) {
  auto closed = [&](const QString& open, const QString& close, bool isDisplay) -> int {
    if (!QStringView(s).mid(i).startsWith(open)) return 0;
    const qsizetype end = s.indexOf(close, i + open.size());
    if (end < 0 || end == i + open.size()) return 0;
    *display = isDisplay;
    *innerStart = i + static_cast<int>(open.size());
    *innerLength = static_cast<int>(end) - *innerStart;
    return static_cast<int>(end + close.size()) - i;
  };
  if (i > 0 && s[i - 1] == QLatin1Char('\\')) return 0;  // \$ or \\( written as text
  if (int n = closed(QStringLiteral("$$"), QStringLiteral("$$"), true)) return n;
  if (int n = closed(QStringLiteral("\\["), QStringLiteral("\\]"), true)) return n;
  if (int n = closed(QStringLiteral("\\("), QStringLiteral("\\)"), false)) return n;
  if (s[i] != QLatin1Char('$') || i + 1 >= s.size() || s[i + 1].isSpace() || s[i + 1] == QLatin1Char('$')) return 0;
  // Inline $...$ on one line: the closing dollar follows a non-space and no digit follows it.
  for (int j = i + 1; j < s.size(); ++j) {
    if (s[j] == QLatin1Char('\n')) return 0;
    if (s[j] == QLatin1Char('\\')) {
      ++j;
      continue;
    }
    if (s[j] != QLatin1Char('$')) continue;
    if (s[j - 1].isSpace() || (j + 1 < s.size() && s[j + 1].isDigit())) return 0;
    *display = false;
    *innerStart = i + 1;
    *innerLength = j - i - 1;
    return j + 1 - i;
  }
  return 0;
}

}  // namespace latex_detail
