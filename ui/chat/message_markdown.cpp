// Qt's Markdown import of one message, then one pass over its fragments to restyle code and
// neutralise images and links (see message_markdown.h).
#include "ui/chat/message_markdown.h"

#include <QGuiApplication>
#include <QPalette>
#include <QTextBlock>
#include <QTextCursor>
#include <QTextFrame>
#include <QTextTable>
#include <QUrl>

#include <vector>

namespace {

constexpr auto kFeatures = QTextDocument::MarkdownFeatures(QTextDocument::MarkdownDialectGitHub |
                                                           QTextDocument::MarkdownNoHTML);

bool isCodeBlock(const QTextBlock& block) {
  // Fenced blocks carry their fence, indented ones only their (empty) language.
  const QTextBlockFormat f = block.blockFormat();
  return f.hasProperty(QTextFormat::BlockCodeFence) || f.hasProperty(QTextFormat::BlockCodeLanguage);
}

struct Edit {
  enum Kind { CodeBlock, InlineCode, Link, Unlink, Image } kind;
  int position;
  int length;
  QString text;  // Unlink: the href (as tooltip); Image: what to show instead
};

}  // namespace

bool isOpenableLink(const QUrl& url) {
  const QString scheme = url.scheme().toLower();
  return scheme == QLatin1String("http") || scheme == QLatin1String("https") || scheme == QLatin1String("mailto");
}

void setMessageMarkdown(QTextDocument& doc, const QString& markdown, bool keepLinks) {
  doc.setMarkdown(markdown, kFeatures);

  // Plan the edits in one read-only pass, then apply them (an edit may merge fragments).
  std::vector<Edit> edits;
  for (QTextBlock block = doc.begin(); block.isValid(); block = block.next()) {
    const bool code = isCodeBlock(block);
    if (code) edits.push_back({Edit::CodeBlock, block.position(), block.length() - 1, {}});
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
      } else if (!code && f.fontFixedPitch()) {
        edits.push_back({Edit::InlineCode, frag.position(), frag.length(), {}});
      }
    }
  }

  const QBrush shade = QGuiApplication::palette().alternateBase();
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
  // Back to front, so that replacing an image by its text moves nothing still to be edited.
  for (auto e = edits.rbegin(); e != edits.rend(); ++e) {
    cursor.setPosition(e->position);
    cursor.setPosition(e->position + e->length, QTextCursor::KeepAnchor);
    switch (e->kind) {
      case Edit::CodeBlock: {
        QTextBlockFormat block;
        block.setBackground(shade);
        cursor.mergeBlockFormat(block);
        QTextCharFormat mono;
        mono.setFontFixedPitch(true);
        mono.setFontFamilies({QStringLiteral("monospace")});
        cursor.mergeBlockCharFormat(mono);  // an empty line of code too
        cursor.mergeCharFormat(mono);
        break;
      }
      case Edit::InlineCode: {
        QTextCharFormat f;
        f.setBackground(shade);
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
