#pragma once
// LaTeX math in replies as readable text: models write $x^2$, \(\alpha\), $$\frac{a}{b}$$ and
// \[...\], and a chat app without a TeX engine would show the commands raw. latexToText turns
// the common commands into Unicode (Greek letters, operators, arrows, ℝ), superscripts and
// subscripts into ² and ᵢ where Unicode has them, \frac into a/b, \sqrt into √; what it does
// not know it shows without its backslash. It reads, it does not typeset.

#include <QString>

QString latexToText(const QString& tex);

// The math spans of a Markdown text, outside code: display math ($$...$$, \[...\]) and inline
// math ($...$ with no space inside its dollars and no digit after the closing one, so "$5 and
// $10" stays prices; \(...\)). `replace` gets each span's TeX and whether it is display math and
// returns what stands in its place.
template <class Replace>
QString replaceMath(const QString& markdown, Replace replace);

// -- implementation ---------------------------------------------------------------------------

namespace latex_detail {
// The length of the math span that opens at `i` (its closing mark included), 0 when none does;
// *display and *inner (start, length of the TeX) describe it.
int mathSpanAt(const QString& s, int i, bool* display, int* innerStart, int* innerLength);
// The length of the code span or fenced block that opens at `i` (kept as it is), 0 when none.
int codeAt(const QString& s, int i);
}  // namespace latex_detail

template <class Replace>
QString replaceMath(const QString& markdown, Replace replace) {
  QString out;
  out.reserve(markdown.size());
  const int n = static_cast<int>(markdown.size());
  for (int i = 0; i < n;) {
    if (const int code = latex_detail::codeAt(markdown, i)) {
      out += QStringView(markdown).mid(i, code);
      i += code;
      continue;
    }
    bool display = false;
    int start = 0, length = 0;
    if (const int span = latex_detail::mathSpanAt(markdown, i, &display, &start, &length)) {
      out += replace(markdown.mid(start, length), display);
      i += span;
      continue;
    }
    if (markdown[i] == QLatin1Char('\\') && i + 1 < n && markdown[i + 1] == QLatin1Char('$')) {  // an escaped dollar
      out += QStringView(markdown).mid(i, 2);
      i += 2;
      continue;
    }
    out += markdown[i++];
  }
  return out;
}
