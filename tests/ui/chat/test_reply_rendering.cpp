// What a reply shows beyond plain Markdown, as the user sees and uses it: a code block under its
// language with a "copy" that puts exactly its code on the clipboard, highlighted, its long lines
// wrapping inside the transcript; <think> folded under "Thinking" until clicked, and left out of
// the next turn's prompt; LaTeX shown as readable text.

#include <QtTest>

#include <QClipboard>
#include <QGuiApplication>
#include <QScrollBar>
#include <QTextBlock>

#include "support/transcript_driver.h"
#include "ui/chat/transcript_view.h"
#include "ui/theme/app_theme.h"

namespace {
using pagedchat::test::chatOf;
using pagedchat::test::clickLink;
using pagedchat::test::clickOn;
using pagedchat::test::fragmentWith;
}  // namespace

class TestReplyRendering : public QObject {
  Q_OBJECT
 private slots:
  void aCodeBlocksCopyCopiesExactlyItsCode() {
    TranscriptView view;
    view.resize(600, 400);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    const QString first = QStringLiteral("def f(x):\n    return x * 2  # double\n\n\nprint(f(3))");
    const QString second = QStringLiteral("echo \"$HOME\"");
    view.showChat(chatOf(1, {QStringLiteral("code?"), QStringLiteral("Two blocks:\n\n```python\n") + first +
                                                         QStringLiteral("\n```\n\nand\n\n```bash\n") + second + QStringLiteral("\n```\n")}),
                  false);
    QSignalSpy copied(&view, &TranscriptView::codeCopied);
    QGuiApplication::clipboard()->clear();
    clickLink(view, QStringLiteral("copycode:1:0"));  // the python block's header
    QTRY_COMPARE(copied.size(), 1);
    QCOMPARE(QGuiApplication::clipboard()->text(), first);
    clickLink(view, QStringLiteral("copycode:1:1"));
    QTRY_COMPARE(copied.size(), 2);
    QCOMPARE(QGuiApplication::clipboard()->text(), second);
  }

  void codeIsHighlightedInTheThemesColours() {
    TranscriptView view;
    view.showChat(chatOf(1, {QStringLiteral("```cpp\nreturn 42; // answer\n```")}), false);
    const TextColors colors = textColors();
    const QTextDocument* doc = view.document();
    QCOMPARE(fragmentWith(doc, QStringLiteral("return")).charFormat().foreground().color(), colors.keyword);
    QCOMPARE(fragmentWith(doc, QStringLiteral("42")).charFormat().foreground().color(), colors.number);
    QCOMPARE(fragmentWith(doc, QStringLiteral("// answer")).charFormat().foreground().color(), colors.comment);
    QVERIFY(fragmentWith(doc, QStringLiteral("// answer")).charFormat().fontItalic());
  }

  void aLongLineOfCodeWrapsInsideTheTranscript() {
    TranscriptView view;
    view.resize(500, 400);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    const QString line = QStringLiteral("x = [") + QStringLiteral("1234567890, ").repeated(40) + QStringLiteral("0]");
    const QString word = QStringLiteral("a").repeated(300);  // no break opportunity at all
    view.showChat(chatOf(1, {QStringLiteral("long"), QStringLiteral("```python\n%1\n%2\n```").arg(line, word)}), false);
    QCOMPARE(view.horizontalScrollBar()->maximum(), 0);
    QVERIFY2(view.document()->size().width() <= view.viewport()->width() + 1,
             qPrintable(QStringLiteral("%1 > %2").arg(view.document()->size().width()).arg(view.viewport()->width())));
    QTextBlock b = view.document()->begin();
    while (b.isValid() && !b.text().startsWith(QLatin1String("x = ["))) b = b.next();
    QVERIFY(b.isValid());
    QVERIFY2(b.layout()->lineCount() > 1, "the long line wraps");
  }

  void thinkingIsFoldedUntilClicked() {
    TranscriptView view;
    view.resize(600, 400);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    ChatRecord chat = chatOf(3, {QStringLiteral("2+2?"), QStringLiteral("<think>The user asks a sum. Two plus two is four.</think>\n\nIt is **4**.")});
    view.showChat(chat, false);
    const QTextDocument* doc = view.document();
    QVERIFY2(doc->toPlainText().contains(QStringLiteral("▸ Thinking (10 words)")), qPrintable(doc->toPlainText()));
    QVERIFY(!doc->toPlainText().contains(QStringLiteral("Two plus two")));
    QVERIFY(!doc->toPlainText().contains(QStringLiteral("<think>")));
    QVERIFY(doc->toPlainText().contains(QStringLiteral("It is 4.")));
    clickOn(view, QStringLiteral("Thinking"));
    QTRY_VERIFY(doc->toPlainText().contains(QStringLiteral("Two plus two is four.")));
    QVERIFY(view.thinkingExpanded(1));
    QVERIFY(fragmentWith(doc, QStringLiteral("Two plus two")).charFormat().fontItalic());
    QVERIFY(doc->toPlainText().contains(QStringLiteral("▾ Thinking")));
    // Open stays open as the chat is shown again, and folds on a second click.
    view.showChat(chat, false);
    QVERIFY(doc->toPlainText().contains(QStringLiteral("Two plus two")));
    clickOn(view, QStringLiteral("Thinking"));
    QTRY_VERIFY(!doc->toPlainText().contains(QStringLiteral("Two plus two")));

    // While the model still thinks, it says so.
    chat.messages.append({.role = QStringLiteral("user"), .content = QStringLiteral("and 3+3?")});
    chat.messages.append({.role = QStringLiteral("assistant"), .content = QStringLiteral("<think>Three and three")});
    view.showChat(chat, true);
    QVERIFY(doc->toPlainText().contains(QStringLiteral("▸ Thinking… (3 words so far)")));
  }

  void thinkingIsLeftOutOfTheNextPrompt() {
    ChatRecord chat = chatOf(4, {QStringLiteral("2+2?"), QStringLiteral("<think>sum</think>\n\nFour."), QStringLiteral("And 3+3?"),
                                 QStringLiteral("<think>half done")});
    const ChatMessages m = chat.engineMessages(QString());
    QCOMPARE(m.size(), 4);
    QCOMPARE(m[1].content, QStringLiteral("Four."));
    // The last message stays whole: a reply being continued goes on from its own text.
    QCOMPARE(m[3].content, QStringLiteral("<think>half done"));
    // A reply that only mentions the tag keeps it.
    QCOMPARE(withoutThinking(QStringLiteral("Use <b> or </think> tags")), QStringLiteral("Use <b> or </think> tags"));
    QCOMPARE(withoutThinking(QStringLiteral("reasoning</think>answer")), QStringLiteral("answer"));
  }

  void mathReadsAsText() {
    TranscriptView view;
    view.showChat(chatOf(5, {QStringLiteral("area?"), QStringLiteral("The area is $\\pi r^2$, and\n\n$$\\sum_{i=1}^{n} i = \\frac{n(n+1)}{2}$$\n\ncosts $5 or $10.")}),
                  false);
    const QTextDocument* doc = view.document();
    QVERIFY2(doc->toPlainText().contains(QStringLiteral("The area is π r², and")), qPrintable(doc->toPlainText()));
    QVERIFY(fragmentWith(doc, QStringLiteral("π r²")).charFormat().fontItalic());
    QTextBlock display = doc->begin();
    while (display.isValid() && display.text() != QStringLiteral("∑ᵢ₌₁ⁿ i = (n(n+1))/2")) display = display.next();
    QVERIFY2(display.isValid(), qPrintable(doc->toPlainText()));
    QCOMPARE(display.blockFormat().alignment() & Qt::AlignHorizontal_Mask, Qt::AlignHCenter);
    QVERIFY(doc->toPlainText().contains(QStringLiteral("costs $5 or $10.")));
  }
};

QTEST_MAIN(TestReplyRendering)
#include "test_reply_rendering.moc"
