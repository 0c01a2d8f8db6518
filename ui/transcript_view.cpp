// Renders a chat to HTML (Markdown basics: fenced code and paragraphs).
#include "ui/transcript_view.h"

#include <QScrollBar>
#include <QUrl>

TranscriptView::TranscriptView(QWidget* parent) : QTextBrowser(parent) {
  setObjectName(QStringLiteral("transcript"));
  setOpenLinks(false);
  setOpenExternalLinks(false);
  connect(this, &QTextBrowser::anchorClicked, this, [this](const QUrl& url) {
    const int k = url.path().toInt();
    if (url.scheme() == QLatin1String("fork")) emit forkRequested(k);
    if (url.scheme() == QLatin1String("copy")) emit copyRequested(k);
  });
}

QString TranscriptView::messageHtml(const QString& text) {
  QString html;
  const QStringList parts = text.split(QStringLiteral("```"));
  for (int i = 0; i < parts.size(); ++i) {
    if (i % 2 == 1) {
      // The fence's first line names the language; the box shows the code only.
      QString code = parts[i];
      const int nl = code.indexOf(QLatin1Char('\n'));
      if (nl >= 0 && !code.left(nl).contains(QLatin1Char(' '))) code = code.mid(nl + 1);
      html += QStringLiteral("<pre style=\"font-family: monospace; background: palette(alternate-base); "
                             "border: 1px solid palette(mid); padding: 6px\">%1</pre>")
                  .arg(code.toHtmlEscaped());
    } else if (!parts[i].trimmed().isEmpty()) {
      html += parts[i].toHtmlEscaped().replace(QLatin1Char('\n'), QStringLiteral("<br>"));
    }
  }
  return html;
}

void TranscriptView::showChat(const ChatRecord& chat, bool replying) {
  QScrollBar* bar = verticalScrollBar();
  const bool atEnd = bar->value() >= bar->maximum() - 4;
  QString html;
  for (int i = 0; i < chat.messages.size(); ++i) {
    const MessageRecord& m = chat.messages[i];
    const bool user = m.role == QLatin1String("user");
    const bool streaming = replying && i == chat.messages.size() - 1;
    html += QStringLiteral("<p><b>%1</b><br>%2</p>").arg(user ? tr("You") : tr("Assistant"), messageHtml(m.content));
    QString footer;
    if (!user && !m.metrics.isEmpty()) footer = m.metrics.summary() + QStringLiteral(" · ");
    if (!streaming)
      footer += QStringLiteral("<a href=\"fork:%1\">%2</a> · <a href=\"copy:%3\">%4</a>")
                    .arg(i + 1).arg(tr("fork here")).arg(i).arg(tr("copy"));
    html += QStringLiteral("<p style=\"color: gray; font-size: small\">%1</p>").arg(footer);
  }
  setHtml(html);
  if (atEnd) bar->setValue(bar->maximum());
}
