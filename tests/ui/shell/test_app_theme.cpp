// The light and dark themes: every colour of ours that carries text reads at 4.5:1 or more on
// what it is drawn on, in both (the transcript's notes, errors, code and its tokens, the pool
// view's counts on every chat colour, and the palettes' own text roles); View > Theme switches
// the whole window at once, the transcript and the pool view redrawn in the new colours, and the
// choice is kept for the next start.

#include <QtTest>

#include <QAction>
#include <QApplication>
#include <QTextBlock>

#include "support/window_driver.h"
#include "ui/chat/transcript_view.h"
#include "ui/pool_view/kv_cell_colors.h"
#include "ui/shell/main_window.h"
#include "ui/theme/app_theme.h"

namespace {
void expectReadable(const QColor& text, const QColor& background, const QString& what) {
  const double ratio = contrastRatio(text, background);
  QVERIFY2(ratio >= 4.5, qPrintable(QStringLiteral("%1: %2 on %3 is %4:1").arg(what, text.name(), background.name()).arg(ratio, 0, 'f', 2)));
}

QColor footerColour(const TranscriptView& view) {
  for (QTextBlock b = view.document()->begin(); b.isValid(); b = b.next())
    if (b.text().contains(QStringLiteral("fork here"))) return b.begin().fragment().charFormat().foreground().color();
  return {};
}
}  // namespace

class TestAppTheme : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { pagedchat::test::useFreshDataFolder(); }

  void contrastRatioIsWcags() {
    QCOMPARE(contrastRatio(Qt::black, Qt::white), 21.0);
    QCOMPARE(contrastRatio(Qt::white, Qt::white), 1.0);
    QVERIFY(qAbs(contrastRatio(QColor(0x77, 0x77, 0x77), Qt::white) - 4.48) < 0.01);
    // Black or white reads on any fill.
    for (int v = 0; v < 256; v += 5)
      for (const QColor& fill : {QColor(v, v, v), QColor(v, 255 - v, 128), QColor::fromHsv(v * 359 / 255, 200, 200)})
        QVERIFY(contrastRatio(readableTextOn(fill), fill) >= 4.5);
  }

  void everyTextColourReadsInBothThemes_data() {
    QTest::addColumn<bool>("dark");
    QTest::newRow("light") << false;
    QTest::newRow("dark") << true;
  }
  void everyTextColourReadsInBothThemes() {
    QFETCH(bool, dark);
    const QPalette p = dark ? darkPalette() : lightPalette();
    QCOMPARE(isDark(p), dark);
    expectReadable(p.color(QPalette::Text), p.color(QPalette::Base), QStringLiteral("text"));
    expectReadable(p.color(QPalette::WindowText), p.color(QPalette::Window), QStringLiteral("window text"));
    expectReadable(p.color(QPalette::ButtonText), p.color(QPalette::Button), QStringLiteral("button text"));
    expectReadable(p.color(QPalette::HighlightedText), p.color(QPalette::Highlight), QStringLiteral("selection"));
    expectReadable(p.color(QPalette::Link), p.color(QPalette::Base), QStringLiteral("link"));
    expectReadable(p.color(QPalette::ToolTipText), p.color(QPalette::ToolTipBase), QStringLiteral("tooltip"));
    const TextColors c = TextColors::forPalette(p);
    expectReadable(c.muted, p.color(QPalette::Base), QStringLiteral("muted"));
    expectReadable(c.muted, c.codeHeader, QStringLiteral("code header"));
    expectReadable(c.error, p.color(QPalette::Base), QStringLiteral("error"));
    expectReadable(c.error, p.color(QPalette::Window), QStringLiteral("error on a dialog"));
    expectReadable(c.ok, p.color(QPalette::Base), QStringLiteral("a good verdict"));
    expectReadable(c.warning, p.color(QPalette::Base), QStringLiteral("a tight verdict"));
    expectReadable(p.color(QPalette::Text), c.codeBackground, QStringLiteral("inline code"));
    const std::pair<QColor, const char*> code[] = {{c.codeText, "code"}, {c.keyword, "keyword"}, {c.string, "string"},
                                                   {c.comment, "comment"}, {c.number, "number"}, {c.tag, "tag"}};
    for (const auto& [colour, name] : code) expectReadable(colour, c.codeBackground, QString::fromLatin1(name));
    // The pool view: the ref count on a shared block of each chat colour, the block table's ids.
    const KvCellColors pool = KvCellColors::fromPalette(p);
    QCOMPARE(pool.dark, dark);
    for (int i = 0; i < KvCellColors::kNumChatColors; ++i)
      expectReadable(readableTextOn(pool.chat(i)), pool.chat(i), QStringLiteral("count on chat colour %1").arg(i));
    expectReadable(p.color(QPalette::WindowText), pool.background, QStringLiteral("pool captions"));
  }

  // A palette of the system's with a code background of its own: our colours adjust to it.
  void aSystemPaletteGetsReadableColoursToo() {
    QPalette odd = lightPalette();
    odd.setColor(QPalette::AlternateBase, QColor(0xc0, 0xc8, 0xd0));
    odd.setColor(QPalette::Base, QColor(0xe0, 0xe0, 0xd0));
    const TextColors c = TextColors::forPalette(odd);
    for (const QColor& colour : {c.codeText, c.keyword, c.string, c.comment, c.number, c.tag})
      expectReadable(colour, c.codeBackground, QStringLiteral("code on a grey background"));
    expectReadable(c.muted, odd.color(QPalette::Base), QStringLiteral("muted on a cream base"));
  }

  void theViewMenuSwitchesTheWholeWindow() {
    const QPalette system = QApplication::palette();
    {
      AppServices services;
      MainWindow w(services);
      w.show();
      QVERIFY(QTest::qWaitForWindowExposed(&w));
      auto* transcript = w.findChild<TranscriptView*>(QStringLiteral("transcript"));
      ChatRecord chat;
      chat.id = 900;
      chat.messages.append({.role = QStringLiteral("user"), .content = QStringLiteral("hello")});
      transcript->showChat(chat, false);
      QCOMPARE(footerColour(*transcript), TextColors::forPalette(QApplication::palette()).muted);

      w.findChild<QAction*>(QStringLiteral("theme_dark"))->trigger();
      QVERIFY(isDark(QApplication::palette()));
      QCOMPARE(QApplication::palette().color(QPalette::Base), darkPalette().color(QPalette::Base));
      QTRY_COMPARE(footerColour(*transcript), TextColors::forPalette(darkPalette()).muted);
      QVERIFY(w.findChild<QAction*>(QStringLiteral("theme_dark"))->isChecked());

      w.findChild<QAction*>(QStringLiteral("theme_light"))->trigger();
      QVERIFY(!isDark(QApplication::palette()));
      QTRY_COMPARE(footerColour(*transcript), TextColors::forPalette(lightPalette()).muted);
      w.findChild<QAction*>(QStringLiteral("theme_dark"))->trigger();
    }
    // Kept: the next window starts dark; "Follow the system" gives the platform's palette back.
    AppServices services;
    MainWindow w(services);
    QVERIFY(isDark(QApplication::palette()));
    QVERIFY(w.findChild<QAction*>(QStringLiteral("theme_dark"))->isChecked());
    w.findChild<QAction*>(QStringLiteral("theme_system"))->trigger();
    QCOMPARE(QApplication::palette().color(QPalette::Base), system.color(QPalette::Base));
    QCOMPARE(QApplication::palette().color(QPalette::Text), system.color(QPalette::Text));
  }
};

QTEST_MAIN(TestAppTheme)
#include "test_app_theme.moc"
