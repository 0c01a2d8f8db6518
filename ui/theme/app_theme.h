#pragma once
// The app's light and dark themes, and the colours of our own drawing (transcript text, code,
// errors) for whichever palette is in use. "Follow the system" keeps the platform's style and
// palette (dark where the desktop is dark); light and dark set Fusion with our palettes. Every
// text colour here reads at a contrast of at least 4.5:1 (WCAG AA) on the background it is
// drawn on, in both themes (tests/ui/shell/test_app_theme.cpp).

#include <QColor>
#include <QPalette>
#include <QString>

enum class ThemeChoice { system, light, dark };

ThemeChoice themeChoiceFromName(const QString& name);  // "light", "dark", else system
QString themeChoiceName(ThemeChoice choice);

// Sets the application's style and palette; the widgets get a PaletteChange and redraw.
void applyTheme(ThemeChoice choice);
QPalette lightPalette();
QPalette darkPalette();
bool isDark(const QPalette& palette);

// The colours our views draw with, for a palette.
struct TextColors {
  QColor muted;           // footers, notes, greyed messages: on Base
  QColor error;           // a failure said in the chat or a dialog: on Base / Window
  QColor ok, warning;     // a verdict that is good, or tight (a model that fits, barely): on Base
  QColor codeBackground;  // behind code blocks and inline code
  QColor codeHeader;      // behind a code block's header (its language, "copy")
  QColor codeText;        // code that no token rule marks
  QColor keyword, string, comment, number, tag;  // code tokens, on codeBackground
  static TextColors forPalette(const QPalette& palette);
};
TextColors textColors();  // for the application's palette now

// WCAG 2 contrast ratio of two opaque colours: 1 (same) to 21 (black on white).
double contrastRatio(const QColor& a, const QColor& b);
// Black or white, whichever reads better on `fill` (at least 4.58:1 for any fill).
QColor readableTextOn(const QColor& fill);
