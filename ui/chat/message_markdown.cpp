// Qt's Markdown import of one message (its math made text first), then passes over the result:
// the math marks become formats, code blocks get their header and highlighting, and links and
// images are neutralised (see message_markdown.h).
#include "ui/chat/message_markdown.h"

#include <QCoreApplication>
#include <QTextBlock>
#include <QTextCursor>
#include <QTextFrame>
#include <QTextTable>
#include <QUrl>

#include <algorithm>
#include <vector>

#include "appcore/text/code_highlighter.h"
#include "appcore/text/latex_text.h"
#include "ui/theme/app_theme.h"

namespace {

constexpr auto kFeatures = QTextDocument::MarkdownFeatures(QTextDocument::MarkdownDialectGitHub |
                                                           QTextDocument::MarkdownNoHTML);
// Private-use characters around math in the Markdown handed to the reader: they come through
// its import untouched and mark where the math's formats go.
constexpr char16_t kInlineOpen = 0xE001, kInlineClose = 0xE002, kDisplay = 0xE003;

bool isCodeBlock(const QTextBlock& block) {
  // Fenced blocks carry their fence, indented ones only their (empty) language.
  const QTextBlockFormat f = block.blockFormat();
  return f.hasProperty(QTextFormat::BlockCodeFence) || f.hasProperty(QTextFormat::BlockCodeLanguage);
}

// The consecutive blocks of one code block: Qt's reader makes a text block of each line.
struct CodeRun {
  int position = 0;  // of its first line
  int length = 0;    // its text, the lines' separators included
  QString language;  // as the fence says it
};

std::vector<CodeRun> codeRuns(const QTextDocument& doc) {
  std::vector<CodeRun> runs;
  bool inRun = false;
  for (QTextBlock block = doc.begin(); block.isValid(); block = block.next()) {
    if (!isCodeBlock(block)) {
      inRun = false;
      continue;
    }
    const QString language = block.blockFormat().stringProperty(QTextFormat::BlockCodeLanguage);
    if (!inRun || runs.back().language != language) {
      runs.push_back({block.position(), block.length() - 1, language});
      inRun = true;
    } else {
      runs.back().length = block.position() + block.length() - 1 - runs.back().position;
    }
  }
  return runs;
}

QString runText(const QTextDocument& doc, const CodeRun& run) {
  QTextCursor c(const_cast<QTextDocument*>(&doc));
  c.setPosition(run.position);
  c.setPosition(run.position + run.length, QTextCursor::KeepAnchor);
  // The selection separates lines with U+2029; a copy wants newlines, and no trailing blank line.
  QString text = c.selectedText().replace(QChar::ParagraphSeparator, QLatin1Char('\n'));
  while (text.endsWith(QLatin1Char('\n'))) text.chop(1);
  return text;
}

// Math as the Markdown reader should see it: the text it reads as, escaped, between marks.
QString markdownWithMathAsText(const QString& markdown) {
  auto escape = [](const QString& text) {
    QString out;
    for (QChar c : text) {
      if (c.unicode() < 128 && c.isPrint() && !c.isLetterOrNumber() && c != QLatin1Char(' ')) out += QLatin1Char('\\');
      out += c;
    }
    return out;
  };
  // The marks are ours alone: the same characters in the text itself stand for what they are not.
  QString text = markdown;
  for (char16_t mark : {kInlineOpen, kInlineClose, kDisplay}) text.replace(QChar(mark), QChar::ReplacementCharacter);
  return replaceMath(text, [&](const QString& tex, bool display) {
    const QString text = escape(latexToText(tex));
    if (display) return QStringLiteral("\n\n%1%2\n\n").arg(QChar(kDisplay), QString(text).replace(QLatin1Char('\n'), QStringLiteral("\\\n")));
    return QStringLiteral("%1%2%3").arg(QChar(kInlineOpen), QString(text).replace(QLatin1Char('\n'), QLatin1Char(' ')), QChar(kInlineClose));
  });
}

// The marks become formats: math in italic serif, display math centred; the marks go.
void formatMath(QTextDocument& doc) {
  struct Mark {
    int position;
    char16_t kind;
  };
  std::vector<Mark> marks;
  for (QTextBlock block = doc.begin(); block.isValid(); block = block.next()) {
    const QString text = block.text();
    for (int i = 0; i < text.size(); ++i)
      if (text[i] == QChar(kInlineOpen) || text[i] == QChar(kInlineClose) || text[i] == QChar(kDisplay))
        marks.push_back({block.position() + i, text[i].unicode()});
  }
  QTextCharFormat math;
  math.setFontItalic(true);
  math.setFontFamilies({QStringLiteral("serif")});
  QTextCursor c(&doc);
  int close = -1;  // an inline math's closing mark, seen first going back to front
  for (auto m = marks.rbegin(); m != marks.rend(); ++m) {
    if (m->kind == kInlineClose) {
      close = m->position;
      continue;
    }
    if (m->kind == kInlineOpen && close > m->position) {
      c.setPosition(m->position + 1);
      c.setPosition(close, QTextCursor::KeepAnchor);
      c.mergeCharFormat(math);
      c.setPosition(close);
      c.deleteChar();
    } else if (m->kind == kDisplay) {
      c.setPosition(m->position);
      c.movePosition(QTextCursor::EndOfBlock, QTextCursor::KeepAnchor);
      c.mergeCharFormat(math);
      QTextBlockFormat centred;
      centred.setAlignment(Qt::AlignHCenter);
      c.mergeBlockFormat(centred);
    }
    c.setPosition(m->position);
    c.deleteChar();
    close = -1;
  }
}

struct Edit {
  enum Kind { Code, InlineCode, Link, Unlink, Image } kind;
  int position;
  int length;
  QString text;  // Code: the language; Unlink: the href (as tooltip); Image: what to show instead
  int index = 0;  // Code: the block's index in the message
};

void styleCode(QTextCursor& cursor, const Edit& e, const TextColors& colors, const QString& linkPrefix) {
  QTextDocument* doc = cursor.document();
  // The lines: shaded, fixed-pitch, wrapping (Qt's reader makes them unbreakable).
  QTextBlockFormat block;
  block.setBackground(colors.codeBackground);
  block.setNonBreakableLines(false);
  block.setLeftMargin(6);
  block.setRightMargin(6);
  cursor.mergeBlockFormat(block);
  QTextCharFormat mono;
  mono.setFontFixedPitch(true);
  mono.setFontFamilies({QStringLiteral("monospace")});
  mono.setForeground(colors.codeText);
  cursor.mergeBlockCharFormat(mono);  // an empty line of code too
  cursor.mergeCharFormat(mono);
  // Its tokens.
  const QString language = codeLanguage(e.text);
  const QString code = cursor.selectedText().replace(QChar::ParagraphSeparator, QLatin1Char('\n'));
  QTextCursor token(doc);
  for (const CodeToken& t : highlightCode(language, code)) {
    token.setPosition(e.position + t.start);
    token.setPosition(e.position + t.start + t.length, QTextCursor::KeepAnchor);
    QTextCharFormat f;
    switch (t.kind) {
      case CodeTokenKind::keyword: f.setForeground(colors.keyword); f.setFontWeight(QFont::DemiBold); break;
      case CodeTokenKind::string: f.setForeground(colors.string); break;
      case CodeTokenKind::comment: f.setForeground(colors.comment); f.setFontItalic(true); break;
      case CodeTokenKind::number: f.setForeground(colors.number); break;
      case CodeTokenKind::tag: f.setForeground(colors.tag); break;
    }
    token.mergeCharFormat(f);
  }
  // The header, a block of its own before the first line: the language, and "copy".
  const QTextBlock first = doc->findBlock(e.position);
  QTextCursor h(doc);
  h.setPosition(e.position);
  h.insertBlock(first.blockFormat(), first.charFormat());  // the first line moves down a block
  h.setPosition(e.position);
  QTextBlockFormat headerBlock;
  headerBlock.setBackground(colors.codeHeader);
  headerBlock.setTopMargin(6);
  headerBlock.setLeftMargin(6);
  headerBlock.setRightMargin(6);
  h.setBlockFormat(headerBlock);
  QTextCharFormat label;
  label.setForeground(colors.muted);
  label.setProperty(QTextFormat::FontSizeAdjustment, -1);
  label.setFontWeight(QFont::DemiBold);
  h.setBlockCharFormat(label);
  const QString name = e.text.trimmed().section(QLatin1Char(' '), 0, 0);
  h.insertText(name.isEmpty() ? QStringLiteral("code") : name, label);
  if (!linkPrefix.isEmpty()) {
    QTextCharFormat link = label;
    link.setFontWeight(QFont::Normal);
    link.setAnchor(true);
    link.setAnchorHref(linkPrefix + QString::number(e.index));
    link.setFontUnderline(true);
    h.insertText(QStringLiteral("   "), label);
    h.insertText(QCoreApplication::translate("MessageMarkdown", "copy"), link);
  }
}

}  // namespace

bool isOpenableLink(const QUrl& url) {
  const QString scheme = url.scheme().toLower();
  return scheme == QLatin1String("http") || scheme == QLatin1String("https") || scheme == QLatin1String("mailto");
}

QStringList messageCodeBlocks(const QString& markdown) {
  QTextDocument doc;
  doc.setMarkdown(markdownWithMathAsText(markdown), kFeatures);
  QStringList out;
  for (const CodeRun& run : codeRuns(doc)) out << runText(doc, run);
  return out;
}

void setMessageMarkdown(QTextDocument& doc, const QString& markdown, bool keepLinks, const QString& codeLinkPrefix) {
  doc.setMarkdown(markdownWithMathAsText(markdown), kFeatures);
  formatMath(doc);

  // Plan the edits in one read-only pass, then apply them (an edit may merge fragments).
  std::vector<Edit> edits;
  int codeIndex = 0;
  for (const CodeRun& run : codeRuns(doc)) edits.push_back({Edit::Code, run.position, run.length, run.language, codeIndex++});
  for (QTextBlock block = doc.begin(); block.isValid(); block = block.next()) {
    if (isCodeBlock(block)) continue;
    for (auto it = block.begin(); !it.atEnd(); ++it) {
      const QTextFragment frag = it.fragment();
      const QTextCharFormat f = frag.charFormat();
      if (f.isImageFormat()) {
        const QTextImageFormat image = f.toImageFormat();
        QString alt = image.stringProperty(QTextFormat::ImageAltText);
        if (alt.isEmpty()) alt = image.name();
        // One fragment may hold several adjacent images with the same format.
        for (int i = frag.length() - 1; i >= 0; --i)
          edits.push_back({Edit::Image, frag.position() + i, 1, QStringLiteral("[%1]").arg(alt)});
      } else if (f.isAnchor() && (!keepLinks || !isOpenableLink(QUrl(f.anchorHref())))) {
        edits.push_back({Edit::Unlink, frag.position(), frag.length(), f.anchorHref()});
      } else if (f.isAnchor()) {
        edits.push_back({Edit::Link, frag.position(), frag.length(), {}});
      } else if (f.fontFixedPitch()) {
        edits.push_back({Edit::InlineCode, frag.position(), frag.length(), {}});
      }
    }
  }
  std::sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) { return a.position < b.position; });

  const TextColors colors = textColors();
  // Tables: Qt's reader leaves them cramped (no cell padding, double borders).
  for (QTextFrame* frame : doc.rootFrame()->childFrames())
    if (auto* table = qobject_cast<QTextTable*>(frame)) {
      QTextTableFormat f = table->format();
      f.setCellPadding(4);
      f.setCellSpacing(0);
      f.setBorderCollapse(true);
      table->setFormat(f);
    }
  QTextCursor cursor(&doc);
  // Back to front, so that replacing an image by its text or adding a code header moves
  // nothing still to be edited.
  for (auto e = edits.rbegin(); e != edits.rend(); ++e) {
    cursor.setPosition(e->position);
    cursor.setPosition(e->position + e->length, QTextCursor::KeepAnchor);
    switch (e->kind) {
      case Edit::Code:
        styleCode(cursor, *e, colors, keepLinks ? codeLinkPrefix : QString());
        break;
      case Edit::InlineCode: {
        QTextCharFormat f;
        f.setBackground(colors.codeBackground);
        cursor.mergeCharFormat(f);
        break;
      }
      case Edit::Link: {
        QTextCharFormat f;
        f.setFontUnderline(true);  // links look like links wherever the document is shown
        cursor.mergeCharFormat(f);
        break;
      }
      case Edit::Unlink: {
        QTextCharFormat f = cursor.charFormat();
        f.setAnchor(false);
        f.clearProperty(QTextFormat::AnchorHref);
        f.clearProperty(QTextFormat::AnchorName);
        f.clearForeground();
        f.setToolTip(e->text);
        cursor.setCharFormat(f);
        break;
      }
      case Edit::Image: {
        QTextCharFormat f;
        f.setFontItalic(true);
        cursor.insertText(e->text, f);
        break;
      }
    }
  }
}
