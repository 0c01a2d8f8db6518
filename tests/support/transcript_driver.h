#pragma once
// Reading and clicking a TranscriptView as a user would, for the ui suites: a chat of
// alternating questions and replies, the fragment or block that holds a text, the links the
// document carries, and a click on a text or on a link by its href.

#include <QtTest>

#include <QTextBlock>
#include <QTextCursor>

#include "ui/chat/transcript_view.h"

namespace pagedchat::test {

// contents[0] is the user's, contents[1] the assistant's, and so on.
inline ChatRecord chatOf(ChatId id, const QStringList& contents) {
  ChatRecord chat;
  chat.id = id;
  for (int i = 0; i < contents.size(); ++i)
    chat.messages.append({.role = i % 2 == 0 ? QStringLiteral("user") : QStringLiteral("assistant"), .content = contents[i]});
  return chat;
}

// The first fragment whose text contains `text`; invalid if none.
inline QTextFragment fragmentWith(const QTextDocument* doc, const QString& text) {
  for (QTextBlock b = doc->begin(); b.isValid(); b = b.next())
    for (auto it = b.begin(); !it.atEnd(); ++it)
      if (it.fragment().text().contains(text)) return it.fragment();
  return {};
}

// The first block whose text is `text`; invalid if none.
inline QTextBlock blockWith(const QTextDocument* doc, const QString& text) {
  for (QTextBlock b = doc->begin(); b.isValid(); b = b.next())
    if (b.text() == text) return b;
  return {};
}

inline QStringList anchorsOf(const QTextDocument* doc) {
  QStringList out;
  for (QTextBlock b = doc->begin(); b.isValid(); b = b.next())
    for (auto it = b.begin(); !it.atEnd(); ++it)
      if (it.fragment().charFormat().isAnchor()) out << it.fragment().charFormat().anchorHref();
  return out;
}

// Clicks position `at` of the document (scrolled into view first).
inline void clickAt(TranscriptView& view, int at) {
  QTextCursor c(view.document());
  c.setPosition(at);
  view.setTextCursor(c);
  view.ensureCursorVisible();
  QTest::mouseClick(view.viewport(), Qt::LeftButton, {}, view.cursorRect(c).center());
}

// Clicks the middle of the first fragment that holds `text`.
inline void clickOn(TranscriptView& view, const QString& text) {
  const QTextFragment f = fragmentWith(view.document(), text);
  QVERIFY2(f.isValid(), qPrintable(text));
  clickAt(view, f.position() + static_cast<int>(f.text().indexOf(text)) + static_cast<int>(text.size()) / 2);
}

// Clicks the link whose href is `href`.
inline void clickLink(TranscriptView& view, const QString& href) {
  for (QTextBlock b = view.document()->begin(); b.isValid(); b = b.next())
    for (auto it = b.begin(); !it.atEnd(); ++it)
      if (it.fragment().charFormat().anchorHref() == href) return clickAt(view, it.fragment().position() + it.fragment().length() / 2);
  QFAIL(qPrintable(QStringLiteral("no link to ") + href));
}

}  // namespace pagedchat::test
