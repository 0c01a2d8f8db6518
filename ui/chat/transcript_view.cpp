// Builds the transcript in the view's document with a text cursor: per message a header, the
// Markdown body (imported into a scratch document, then inserted as a fragment) and a footer.
#include "ui/chat/transcript_view.h"

#include <QApplication>
#include <QClipboard>
#include <QDesktopServices>
#include <QJsonDocument>
#include <QLocale>
#include <QAbstractTextDocumentLayout>
#include <QScrollBar>
#include <QTextBlock>
#include <QTextCursor>
#include <QTextDocumentFragment>
#include <QUrl>

#include <algorithm>

#include "ui/chat/message_markdown.h"
#include "appcore/chat/reply_thinking.h"
#include "ui/theme/app_theme.h"

TranscriptView::TranscriptView(QWidget* parent) : QTextBrowser(parent) {
  setObjectName(QStringLiteral("transcript"));
  setOpenLinks(false);
  setOpenExternalLinks(false);
  document()->setUndoRedoEnabled(false);  // rebuilt 30 times a second while streaming
  // A long word or line of code wraps where it must rather than widening the transcript.
  setWordWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  // Following the end: as the document grows (a long one is laid out bit by bit, after it is
  // set) the view stays at its end, until the reader scrolls away from it.
  connect(document()->documentLayout(), &QAbstractTextDocumentLayout::documentSizeChanged, this, [this] {
    if (m_followEnd) verticalScrollBar()->setValue(verticalScrollBar()->maximum());
  });
  connect(verticalScrollBar(), &QScrollBar::actionTriggered, this, [this] {
    QMetaObject::invokeMethod(this, [this] {  // once the action has moved the bar
      m_followEnd = verticalScrollBar()->value() >= verticalScrollBar()->maximum() - 4;
    }, Qt::QueuedConnection);
  });
  connect(this, &QTextBrowser::anchorClicked, this, [this](const QUrl& url) {
    // fork: and copy: anchors are ours: a message's own links of those schemes were made text.
    const int k = url.path().toInt();
    if (url.scheme() == QLatin1String("fork")) emit forkRequested(k);
    else if (url.scheme() == QLatin1String("context")) emit contextChoice(url.path());
    else if (url.scheme() == QLatin1String("continue")) emit continueRequested();
    else if (url.scheme() == QLatin1String("edit")) emit editRequested(k);
    else if (url.scheme() == QLatin1String("version")) emit versionRequested(url.path().section(QLatin1Char(':'), 0, 0).toInt(),
                                                                             url.path().section(QLatin1Char(':'), 1, 1).toInt());
    else if (url.scheme() == QLatin1String("copy")) emit copyRequested(k);
    else if (url.scheme() == QLatin1String("think")) toggleThinking(k);
    else if (url.scheme() == QLatin1String("errordetail")) toggleErrorDetail();
    else if (url.scheme() == QLatin1String("toolresult")) toggleToolResult(k);
    else if (url.scheme() == QLatin1String("toolallow")) emit toolCallAnswered(url.path(), QStringLiteral("allow"));
    else if (url.scheme() == QLatin1String("toolalways")) emit toolCallAnswered(url.path(), QStringLiteral("always"));
    else if (url.scheme() == QLatin1String("tooldeny")) emit toolCallAnswered(url.path(), QStringLiteral("deny"));
    else if (url.scheme() == QLatin1String("toolstop")) emit toolCallStopRequested();
    else if (url.scheme() == QLatin1String("copycode")) {
      // copycode:<message>:<block>
      const int message = url.path().section(QLatin1Char(':'), 0, 0).toInt();
      const int block = url.path().section(QLatin1Char(':'), 1, 1).toInt();
      if (message < 0 || message >= m_shown.size()) return;
      const QStringList blocks = messageCodeBlocks(m_shown[message].content);
      if (block < 0 || block >= blocks.size()) return;
      QApplication::clipboard()->setText(blocks[block]);
      emit codeCopied(blocks[block]);
    }
    else if (isOpenableLink(url)) QDesktopServices::openUrl(url);
  });
}

QString TranscriptView::messageHtml(const QString& text) {
  QTextDocument doc;
  // A column has no room for the thinking: a line says it is there (the chosen reply's
  // transcript shows it, folded).
  const ReplyThinking parts = splitThinking(text);
  const QString shown = !parts.present ? text
                        : parts.open   ? tr("*Thinking…*")
                                       : tr("*(thought for %1 words first)*").arg(thinkingWords(parts.thinking)) +
                                             QStringLiteral("\n\n") + parts.answer;
  setMessageMarkdown(doc, shown, /*keepLinks=*/false);
  return doc.toHtml();
}

void TranscriptView::appendMessage(QTextCursor& cursor, int index, const ShownMessage& m) {
  QTextDocument body;
  // A code block's copy link names the message and the block: copycode:<message>:<block>.
  setMessageMarkdown(body, m.toolResult ? QString() : m.content, /*keepLinks=*/true, QStringLiteral("copycode:%1:").arg(index));
  const TextColors colors = textColors();

  // The header goes into the body's document as its first block: the first block of an inserted
  // fragment takes the format of the block it lands in, which would lose a heading or a list
  // that opens the message. A new block after the header carries the first block's format on.
  QTextCursor c(&body);
  c.insertBlock(c.blockFormat(), c.charFormat());
  c.movePosition(QTextCursor::Start);
  c.setBlockFormat(QTextBlockFormat());
  QTextCharFormat bold;
  bold.setFontWeight(QFont::Bold);
  c.insertText(m.user ? tr("You") : m.toolResult ? tr("Result of %1").arg(m.toolName) : tr("Assistant"), bold);
  if (m.outOfView) {
    // Greyed, and marked: the model no longer reads it.
    QTextCursor all(&body);
    all.select(QTextCursor::Document);
    QTextCharFormat grey;
    grey.setForeground(colors.muted);
    all.mergeCharFormat(grey);
    QTextCharFormat mark = grey;
    mark.setFontItalic(true);
    c.insertText(tr(" · outside the model's view (dropped when the chat outgrew the context)"), mark);
  }
  if (m.hasThinking) appendThinking(c, index, m);
  if (m.toolResult) appendToolResult(c, index, m);
  if (!m.calls.isEmpty()) {
    c.movePosition(QTextCursor::End);
    appendToolCalls(c, m);
  }

  if (!m.footer.isEmpty() || m.actions || m.numVersions > 1) {
    c.movePosition(QTextCursor::End);
    QTextBlockFormat footerBlock;
    footerBlock.setTopMargin(4);
    QTextCharFormat gray;
    gray.setForeground(colors.muted);
    gray.setProperty(QTextFormat::FontSizeAdjustment, -1);  // small
    c.insertBlock(footerBlock, gray);
    QTextCharFormat link = gray;
    link.setAnchor(true);
    link.setFontUnderline(true);
    if (m.numVersions > 1) {
      // The versions of the conversation from here: "< 2 / 3 >", the arrows links when they lead somewhere.
      auto arrow = [&](const QString& text, int delta, bool enabled) {
        if (!enabled) return c.insertText(text, gray);
        link.setAnchorHref(QStringLiteral("version:%1:%2").arg(index).arg(delta));
        c.insertText(text, link);
      };
      arrow(QStringLiteral("<"), -1, m.versionIndex > 0);
      c.insertText(QStringLiteral(" %1 / %2 ").arg(m.versionIndex + 1).arg(m.numVersions), gray);
      arrow(QStringLiteral(">"), 1, m.versionIndex + 1 < m.numVersions);
      if (!m.footer.isEmpty() || m.actions) c.insertText(QStringLiteral(" · "), gray);
    }
    c.insertText(m.footer, gray);
    if (m.actions) {
      if (!m.footer.isEmpty()) c.insertText(QStringLiteral(" · "), gray);
      if (m.user) {
        link.setAnchorHref(QStringLiteral("edit:%1").arg(index));
        c.insertText(tr("edit"), link);
        c.insertText(QStringLiteral(" · "), gray);
      }
      link.setAnchorHref(QStringLiteral("fork:%1").arg(index + 1));
      c.insertText(tr("fork here"), link);
      c.insertText(QStringLiteral(" · "), gray);
      link.setAnchorHref(QStringLiteral("copy:%1").arg(index));
      c.insertText(tr("copy"), link);
      if (m.canContinue) {
        c.insertText(QStringLiteral(" · "), gray);
        link.setAnchorHref(QStringLiteral("continue:%1").arg(index));
        link.setFontWeight(QFont::Bold);
        c.insertText(tr("continue"), link);
      }
    }
  }
  cursor.insertFragment(QTextDocumentFragment(&body));

  // The header block (the fragment's first) took the format of the block it landed in.
  QTextCursor header(cursor.document()->findBlock(m.start));
  QTextBlockFormat headerBlock;
  headerBlock.setTopMargin(index == 0 ? 0 : 14);
  header.setBlockFormat(headerBlock);
}

// After the header: "▸ Thinking (N words)", a link that opens it; open, the thinking follows
// in muted italics. While the model still thinks, the line says so.
void TranscriptView::appendThinking(QTextCursor& c, int index, const ShownMessage& m) {
  const TextColors colors = textColors();
  QTextCharFormat muted;
  muted.setForeground(colors.muted);
  QTextCharFormat link = muted;
  link.setAnchor(true);
  link.setAnchorHref(QStringLiteral("think:%1").arg(index));
  link.setFontUnderline(true);
  const int words = thinkingWords(m.thinking);
  c.insertBlock(QTextBlockFormat(), muted);
  const QString arrow = m.thinkingExpanded ? QStringLiteral("▾ ") : QStringLiteral("▸ ");
  c.insertText(arrow + (m.thinkingOpen ? tr("Thinking…") : tr("Thinking")), link);
  const QString count = words == 1 ? tr("1 word") : tr("%1 words").arg(words);
  c.insertText(QStringLiteral(" ") + (m.thinkingOpen ? tr("(%1 so far)").arg(count) : tr("(%1)").arg(count)), muted);
  if (!m.thinkingExpanded || m.thinking.isEmpty()) return;
  QTextDocument thinking;
  setMessageMarkdown(thinking, m.thinking);
  QTextCursor all(&thinking);
  all.select(QTextCursor::Document);
  QTextCharFormat quiet = muted;
  quiet.setFontItalic(true);
  all.mergeCharFormat(quiet);
  QTextBlockFormat indent;
  indent.setLeftMargin(12);
  all.mergeBlockFormat(indent);
  c.insertBlock(QTextBlockFormat(), muted);
  c.insertFragment(QTextDocumentFragment(&thinking));
}

namespace {

// `text` as the lines of a code block (monospace on the code background), after the cursor's
// block: a tool's arguments and results are data, not Markdown.
void appendCodeLines(QTextCursor& c, const QString& text) {
  const TextColors colors = textColors();
  QTextBlockFormat code;
  code.setLeftMargin(8);
  code.setBackground(colors.codeBackground);
  QTextCharFormat mono;
  mono.setFontFixedPitch(true);
  mono.setFontFamilies({QStringLiteral("monospace")});
  mono.setForeground(colors.codeText);
  for (const QString& line : text.split(QLatin1Char('\n'))) {
    c.insertBlock(code, mono);
    c.insertText(line, mono);
  }
}

}  // namespace

// Each call as a card: the tool, its arguments as indented JSON in a code block, and what the
// user can do about it: allow or deny the call that waits, stop the one that runs.
void TranscriptView::appendToolCalls(QTextCursor& c, const ShownMessage& m) {
  const TextColors colors = textColors();
  for (const ShownMessage::Call& call : m.calls) {
    QTextBlockFormat card;
    card.setTopMargin(6);
    card.setLeftMargin(8);
    card.setBackground(colors.codeHeader);
    QTextCharFormat title;
    title.setFontWeight(QFont::DemiBold);
    c.insertBlock(card, title);
    c.insertText(tr("Tool call: %1").arg(call.name), title);
    if (!call.server.isEmpty()) {
      QTextCharFormat server;
      server.setForeground(colors.muted);
      c.insertText(tr("  on %1").arg(call.server), server);
    }
    appendCodeLines(c, call.arguments);
    if (call.state == ShownMessage::Call::State::made) continue;
    QTextBlockFormat actions;
    actions.setLeftMargin(8);
    actions.setBottomMargin(4);
    actions.setBackground(colors.codeHeader);
    QTextCharFormat plain;
    c.insertBlock(actions, plain);
    QTextCharFormat link;
    link.setAnchor(true);
    link.setFontUnderline(true);
    link.setFontWeight(QFont::Bold);
    auto action = [&](const QString& href, const QString& text) {
      link.setAnchorHref(href);
      c.insertText(text, link);
    };
    if (call.state == ShownMessage::Call::State::waiting) {
      c.insertText(tr("Run it?  "), plain);
      action(QStringLiteral("toolallow:") + call.id, tr("Allow once"));
      c.insertText(QStringLiteral("  ·  "), plain);
      action(QStringLiteral("toolalways:") + call.id, tr("Always allow %1").arg(call.name));
      c.insertText(QStringLiteral("  ·  "), plain);
      action(QStringLiteral("tooldeny:") + call.id, tr("Deny"));
    } else {
      QTextCharFormat muted;
      muted.setForeground(colors.muted);
      c.insertText(call.progress.isEmpty() ? tr("Running…  ") : tr("Running: %1  ").arg(call.progress), muted);
      action(QStringLiteral("toolstop:") + call.id, tr("Stop"));
    }
  }
}

// A tool's result, folded under one line ("▸ 12 lines, 431 characters"); open, it follows as
// plain monospace text (a result is data, not Markdown). A call that did not run says why at once.
void TranscriptView::appendToolResult(QTextCursor& c, int index, const ShownMessage& m) {
  const TextColors colors = textColors();
  QTextCharFormat muted;
  muted.setForeground(m.resultFailed ? colors.error : colors.muted);
  c.movePosition(QTextCursor::NextBlock);  // the body's block (a result is not Markdown): its first line goes there
  if (m.resultFailed) {
    c.insertText(m.content.left(2000), muted);
    return;
  }
  QTextCharFormat link = muted;
  link.setAnchor(true);
  link.setAnchorHref(QStringLiteral("toolresult:%1").arg(index));
  link.setFontUnderline(true);
  const QLocale locale;
  const int lines = static_cast<int>(m.content.count(QLatin1Char('\n'))) + (m.content.endsWith(QLatin1Char('\n')) ? 0 : 1);
  const QString size = (lines == 1 ? tr("1 line") : tr("%1 lines").arg(locale.toString(lines))) + tr(", ") +
                       (m.content.size() == 1 ? tr("1 character") : tr("%1 characters").arg(locale.toString(m.content.size())));
  c.insertText((m.resultExpanded ? QStringLiteral("▾ ") : QStringLiteral("▸ ")) + (m.resultExpanded ? tr("Hide the result") : tr("Show the result")), link);
  c.insertText(QStringLiteral(" (%1)").arg(size), muted);
  if (!m.resultExpanded) return;
  QString text = m.content;
  if (text.endsWith(QLatin1Char('\n'))) text.chop(1);
  appendCodeLines(c, text);
}

void TranscriptView::toggleToolResult(int index) {
  if (index < 0 || index >= m_shown.size() || !m_shown[index].toolResult) return;
  if (!m_expandedResults.remove(index)) m_expandedResults.insert(index);
  QVector<ShownMessage> shown = m_shown;
  shown[index].resultExpanded = m_expandedResults.contains(index);
  render(m_shownChat, std::move(shown));
}

void TranscriptView::toggleThinking(int index) {
  if (index < 0 || index >= m_shown.size() || !m_shown[index].hasThinking) return;
  if (!m_expandedThinking.remove(index)) m_expandedThinking.insert(index);
  QVector<ShownMessage> shown = m_shown;
  shown[index].thinkingExpanded = m_expandedThinking.contains(index);
  render(m_shownChat, std::move(shown));
}

void TranscriptView::toggleErrorDetail() {
  m_errorDetailShown = !m_errorDetailShown;
  QVector<ShownMessage> shown = m_shown;
  for (ShownMessage& m : shown)
    if (!m.error.sentence.isEmpty()) m.detailShown = m_errorDetailShown;
  render(m_shownChat, std::move(shown));
}

void TranscriptView::changeEvent(QEvent* event) {
  QTextBrowser::changeEvent(event);
  // Our colours are in the document's formats: drawn again in the new palette's.
  if (event->type() == QEvent::PaletteChange && m_shownChat >= 0) render(m_shownChat, m_shown, /*whole=*/true);
}

void TranscriptView::appendError(QTextCursor& cursor, const ShownMessage& m) {
  const TextColors colors = textColors();
  QTextBlockFormat block;
  block.setTopMargin(14);
  cursor.setBlockFormat(block);
  QTextCharFormat sentence;
  sentence.setForeground(colors.error);
  sentence.setFontWeight(QFont::DemiBold);
  cursor.insertText(m.error.sentence, sentence);
  if (m.error.detail.isEmpty() || m.error.detail == m.error.sentence) return;
  QTextCharFormat link;
  link.setForeground(colors.muted);
  link.setAnchor(true);
  link.setAnchorHref(QStringLiteral("errordetail:"));
  link.setFontUnderline(true);
  cursor.insertText(QStringLiteral("  "), QTextCharFormat());
  cursor.insertText(m.detailShown ? tr("hide details") : tr("details"), link);
  if (!m.detailShown) return;
  QTextCharFormat detail;
  detail.setForeground(colors.muted);
  detail.setFontFixedPitch(true);
  detail.setFontFamilies({QStringLiteral("monospace")});
  cursor.insertBlock(QTextBlockFormat(), detail);
  cursor.insertText(m.error.detail, detail);
}

void TranscriptView::appendNotice(QTextCursor& cursor, const ShownMessage& m) {
  QTextBlockFormat block;
  block.setTopMargin(14);
  cursor.setBlockFormat(block);
  QTextCharFormat warn;
  warn.setFontWeight(QFont::Bold);
  cursor.insertText(m.notice, warn);
  cursor.insertBlock(QTextBlockFormat(), QTextCharFormat());
  QTextCharFormat link;
  link.setAnchor(true);
  link.setFontUnderline(true);
  const std::pair<const char*, QString> choices[] = {
      {"context:drop", tr("Drop the oldest turns")},
      {"context:recent", tr("Continue in a new chat from the recent messages")},
      {"context:cancel", tr("Cancel")}};
  for (const auto& [href, text] : choices) {
    if (href != choices[0].first) cursor.insertText(QStringLiteral("  ·  "), QTextCharFormat());
    link.setAnchorHref(QString::fromLatin1(href));
    cursor.insertText(text, link);
  }
}

void TranscriptView::showChat(const ChatRecord& chat, bool replying, int contextFullTokens, int contextLength,
                              const PlainError& error, const PendingToolCall& pending) {
  if (chat.id != m_shownChat) m_expandedResults.clear();
  QVector<ShownMessage> shown(chat.messages.size());
  for (int i = 0; i < chat.messages.size(); ++i) {
    const MessageRecord& m = chat.messages[i];
    ShownMessage& s = shown[i];
    s.user = m.role == QLatin1String("user");
    s.content = m.content;
    for (const ToolCallRecord& call : m.toolCalls) {
      ShownMessage::Call shownCall{call.id, call.name, call.arguments};
      const QJsonDocument args = QJsonDocument::fromJson(call.arguments.toUtf8());
      if (args.isObject()) shownCall.arguments = QString::fromUtf8(args.toJson(QJsonDocument::Indented)).trimmed();
      if (call.id == pending.callId) {
        shownCall.state = pending.running ? ShownMessage::Call::State::running : ShownMessage::Call::State::waiting;
        shownCall.server = pending.server;
        shownCall.progress = pending.progress;
      }
      s.calls.append(shownCall);
    }
    if (m.role == QLatin1String("tool")) {
      s.toolResult = true;
      s.toolName = m.toolName;
      // What the app answered for a call that did not run (or failed) is said at once, in one line.
      s.resultFailed = m.content.startsWith(QLatin1String("Error: ")) || m.content.startsWith(QLatin1String("Not run: ")) ||
                       m.content.startsWith(QLatin1String("The user denied"));
      s.resultExpanded = m_expandedResults.contains(i);
    }
    if (!s.user) {
      const ReplyThinking parts = splitThinking(m.content);
      if (parts.present) {
        s.hasThinking = true;
        s.thinkingOpen = parts.open;
        s.thinking = parts.thinking;
        s.content = parts.answer;
        s.thinkingExpanded = chat.id == m_shownChat && m_expandedThinking.contains(i);
      }
    }
    // The reply streaming now has no footer yet: a continued one's old "interrupted" or "cut at
    // its length" no longer holds, and its new figures come when it ends.
    const bool streaming = replying && i == chat.messages.size() - 1 && pending.callId.isEmpty() && !s.toolResult;
    if (!s.user && !s.toolResult && !m.metrics.isEmpty() && !streaming) s.footer = m.metrics.summary();
    s.actions = !streaming;
    s.outOfView = i < chat.firstInView;
    s.versionIndex = m.versionIndex;
    s.numVersions = m.numVersions();
    // Cut by its length, or interrupted (the app or its model went): Continue writes more of it.
    s.canContinue = !replying && !s.user && i == chat.messages.size() - 1 &&
                    (m.metrics.finishReason == QLatin1String("length") || m.metrics.finishReason == ReplyMetrics::kInterrupted);
  }
  if (contextFullTokens > 0) {
    ShownMessage notice;
    notice.notice = tr("This chat no longer fits in the model's context: %1 of %2 tokens, with no room left for a reply.")
                        .arg(contextFullTokens)
                        .arg(contextLength);
    shown.append(notice);
  }
  if (chat.id != m_shownChat) {
    m_expandedThinking.clear();
    m_errorDetailShown = false;
  }
  if (!error.sentence.isEmpty()) {
    ShownMessage failed;
    failed.error = error;
    failed.detailShown = m_errorDetailShown;
    shown.append(failed);
  }
  render(chat.id, std::move(shown));
}

void TranscriptView::render(ChatId chatId, QVector<ShownMessage> shown, bool whole) {
  // Keep the messages that are shown already as they are (the whole chat but the streaming
  // reply, usually), unless the document was changed behind our back.
  QTextDocument* doc = document();
  int first = 0;
  const bool same = !whole && chatId == m_shownChat && doc->characterCount() == m_shownCharacters;
  if (same)
    while (first < shown.size() && first < m_shown.size() && shown[first] == m_shown[first]) ++first;
  if (same && first == shown.size() && first == m_shown.size()) return;

  // Followed to its end while the reader is there; another chat opens at its end.
  QScrollBar* bar = verticalScrollBar();
  const bool toEnd = m_followEnd || bar->value() >= bar->maximum() - 4 || chatId != m_shownChat;
  QTextCursor cursor(doc);
  if (first == 0) {
    doc->clear();
  } else if (first < m_shown.size()) {
    // From the end of the last kept message's footer (the separator before the next header).
    cursor.setPosition(m_shown[first].start - 1);
    cursor.movePosition(QTextCursor::End, QTextCursor::KeepAnchor);
  } else {
    cursor.movePosition(QTextCursor::End);
  }
  cursor.beginEditBlock();
  cursor.removeSelectedText();
  for (int i = 0; i < first; ++i) shown[i].start = m_shown[i].start;
  for (int i = first; i < shown.size(); ++i) {
    if (i > 0) cursor.insertBlock(QTextBlockFormat(), QTextCharFormat());
    shown[i].start = cursor.position();
    if (!shown[i].notice.isEmpty()) appendNotice(cursor, shown[i]);
    else if (!shown[i].error.sentence.isEmpty()) appendError(cursor, shown[i]);
    else appendMessage(cursor, i, shown[i]);
  }
  cursor.endEditBlock();

  m_shownChat = chatId;
  m_shown = std::move(shown);
  m_shownCharacters = doc->characterCount();
  if (toEnd) scrollToEnd();
}

void TranscriptView::scrollToEnd() {
  // The text cursor, and a selection, stay as they are.
  m_followEnd = true;
  verticalScrollBar()->setValue(verticalScrollBar()->maximum());
}

// A narrower window makes the chat taller: a reader at its end stays there.
void TranscriptView::resizeEvent(QResizeEvent* event) {
  QScrollBar* bar = verticalScrollBar();
  const bool atEnd = m_followEnd || bar->value() >= bar->maximum() - 4;
  QTextBrowser::resizeEvent(event);
  if (atEnd) scrollToEnd();
}

void TranscriptView::revealMessage(int index, const QStringList& words) {
  if (index < 0 || index >= m_shown.size()) return;
  m_followEnd = false;  // this message, not the end
  QTextDocument* doc = document();
  const int start = m_shown[index].start;
  const int end = index + 1 < m_shown.size() ? m_shown[index + 1].start : doc->characterCount();
  QTextCursor at(doc);
  at.setPosition(start);
  for (const QString& word : words) {
    const QTextCursor found = doc->find(word, start);
    if (!found.isNull() && found.selectionEnd() <= end) {
      at = found;
      break;
    }
  }
  // The message's end first, then its match: the match shows with as much of the message as fits.
  QTextCursor messageEnd(doc);
  messageEnd.setPosition(std::max(start, end - 1));
  setTextCursor(messageEnd);
  ensureCursorVisible();
  QTextCursor header(doc);
  header.setPosition(start);
  setTextCursor(header);
  ensureCursorVisible();
  setTextCursor(at);
  ensureCursorVisible();
}
