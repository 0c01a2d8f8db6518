// Palettes chosen by hand, then checked by contrast (the tests): the dark one near the common
// desktop dark themes (#1e1f22 base, #2b2d30 window), the light one Fusion's with a white base.
#include "ui/theme/app_theme.h"

#include <QApplication>
#include <QStyle>
#include <QStyleFactory>

#include <cmath>
#include <memory>

namespace {
// The platform's own, as the app started: "follow the system" goes back to them.
struct SystemLook {
  QString style;
  QPalette palette;
  bool captured = false;
};
SystemLook& systemLook() {
  static SystemLook look;
  if (!look.captured && qApp) {
    look.style = QApplication::style()->name();
    look.palette = QApplication::palette();
    look.captured = true;
  }
  return look;
}

double luminance(const QColor& c) {
  auto channel = [](double v) { return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
  return 0.2126 * channel(c.redF()) + 0.7152 * channel(c.greenF()) + 0.0722 * channel(c.blueF());
}
}  // namespace

ThemeChoice themeChoiceFromName(const QString& name) {
  if (name == QLatin1String("light")) return ThemeChoice::light;
  if (name == QLatin1String("dark")) return ThemeChoice::dark;
  return ThemeChoice::system;
}

QString themeChoiceName(ThemeChoice choice) {
  switch (choice) {
    case ThemeChoice::light: return QStringLiteral("light");
    case ThemeChoice::dark: return QStringLiteral("dark");
    case ThemeChoice::system: break;
  }
  return QStringLiteral("system");
}

QPalette lightPalette() {
  const std::unique_ptr<QStyle> fusion(QStyleFactory::create(QStringLiteral("Fusion")));  // ours to delete
  QPalette p = fusion->standardPalette();
  p.setColor(QPalette::Base, Qt::white);
  p.setColor(QPalette::AlternateBase, QColor(0xf3, 0xf4, 0xf6));
  p.setColor(QPalette::Link, QColor(0x0b, 0x57, 0xd0));
  p.setColor(QPalette::LinkVisited, QColor(0x6a, 0x1b, 0x9a));
  p.setColor(QPalette::Highlight, QColor(0x1f, 0x6f, 0xb2));  // Fusion's #308cc6 gives white text 3.7:1
  return p;
}

QPalette darkPalette() {
  QPalette p;
  const QColor window(0x2b, 0x2d, 0x30), base(0x1e, 0x1f, 0x22), text(0xe6, 0xe6, 0xe6), disabled(0x8a, 0x8d, 0x91);
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, QColor(0x2a, 0x2c, 0x30));
  p.setColor(QPalette::ToolTipBase, QColor(0x3c, 0x3f, 0x41));
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::PlaceholderText, disabled);
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, QColor(0x3c, 0x3f, 0x41));
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, QColor(0xff, 0x6b, 0x6b));
  p.setColor(QPalette::Light, QColor(0x4a, 0x4d, 0x50));
  p.setColor(QPalette::Midlight, QColor(0x40, 0x43, 0x46));
  p.setColor(QPalette::Mid, QColor(0x30, 0x32, 0x35));
  p.setColor(QPalette::Dark, QColor(0x19, 0x1a, 0x1c));
  p.setColor(QPalette::Shadow, Qt::black);
  p.setColor(QPalette::Highlight, QColor(0x2f, 0x65, 0xca));
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::Link, QColor(0x8a, 0xb4, 0xf8));
  p.setColor(QPalette::LinkVisited, QColor(0xc5, 0x8a, 0xf9));
  for (QPalette::ColorRole role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
    p.setColor(QPalette::Disabled, role, disabled);
  p.setColor(QPalette::Disabled, QPalette::Highlight, QColor(0x3c, 0x3f, 0x41));
  return p;
}

bool isDark(const QPalette& palette) { return palette.color(QPalette::Base).lightnessF() < 0.5; }

void applyTheme(ThemeChoice choice) {
  SystemLook& look = systemLook();
  if (choice == ThemeChoice::system) {
    if (QApplication::style()->name() != look.style) QApplication::setStyle(look.style);
    QApplication::setPalette(look.palette);
    return;
  }
  if (QApplication::style()->name().compare(QLatin1String("fusion"), Qt::CaseInsensitive) != 0)
    QApplication::setStyle(QStringLiteral("Fusion"));
  QApplication::setPalette(choice == ThemeChoice::dark ? darkPalette() : lightPalette());
}

TextColors TextColors::forPalette(const QPalette& palette) {
  TextColors c;
  c.codeBackground = palette.color(QPalette::AlternateBase);
  c.codeHeader = isDark(palette) ? c.codeBackground.lighter(125) : c.codeBackground.darker(106);
  if (isDark(palette)) {
    c.muted = QColor(0xa8, 0xab, 0xb0);
    c.error = QColor(0xf2, 0xb8, 0xb5);
    c.ok = QColor(0x9c, 0xd6, 0x9a);
    c.warning = QColor(0xf0, 0xc6, 0x74);
    c.codeText = QColor(0xe6, 0xe6, 0xe6);
    c.keyword = QColor(0x82, 0xaa, 0xff);
    c.string = QColor(0xa5, 0xd6, 0x8b);
    c.comment = QColor(0xa0, 0xa4, 0xaa);
    c.number = QColor(0xf0, 0xa3, 0x6b);
    c.tag = QColor(0xe0, 0x9e, 0xe8);
  } else {
    c.muted = QColor(0x5f, 0x63, 0x68);
    c.error = QColor(0xb3, 0x26, 0x1e);
    c.ok = QColor(0x1b, 0x6e, 0x2a);
    c.warning = QColor(0x8a, 0x55, 0x00);
    c.codeText = QColor(0x1f, 0x23, 0x28);
    c.keyword = QColor(0x00, 0x33, 0xb3);
    c.string = QColor(0x06, 0x6d, 0x17);
    c.comment = QColor(0x5c, 0x63, 0x70);
    c.number = QColor(0x9a, 0x3e, 0x0c);
    c.tag = QColor(0x80, 0x1d, 0x80);
  }
  // A platform palette of its own (system theme) may have other backgrounds: a colour that
  // would read below 4.5:1 on its background moves toward the text colour until it does not.
  const QColor text = palette.color(QPalette::Text);
  auto deepen = [&text](QColor& fg, const QColor& background) {
    for (int step = 0; step < 10 && contrastRatio(fg, background) < 4.5; ++step)
      fg = QColor::fromRgbF(fg.redF() + (text.redF() - fg.redF()) * 0.25, fg.greenF() + (text.greenF() - fg.greenF()) * 0.25,
                            fg.blueF() + (text.blueF() - fg.blueF()) * 0.25);
  };
  for (QColor* fg : {&c.codeText, &c.keyword, &c.string, &c.comment, &c.number, &c.tag}) deepen(*fg, c.codeBackground);
  for (QColor* fg : {&c.muted, &c.error, &c.ok, &c.warning}) deepen(*fg, palette.color(QPalette::Base));
  deepen(c.muted, c.codeHeader);  // the header's label is muted too
  return c;
}

TextColors textColors() { return TextColors::forPalette(QApplication::palette()); }

double contrastRatio(const QColor& a, const QColor& b) {
  const double la = luminance(a), lb = luminance(b);
  return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

QColor readableTextOn(const QColor& fill) {
  return contrastRatio(Qt::black, fill) >= contrastRatio(Qt::white, fill) ? QColor(Qt::black) : QColor(Qt::white);
}
