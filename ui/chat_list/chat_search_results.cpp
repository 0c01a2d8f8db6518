// Search results as rich-text rows: the chat's title, and a message's snippet with its matched
// words in bold.
#include "ui/chat_list/chat_search_results.h"

#include <QLabel>

#include <algorithm>

#include "appcore/chat/chat_database.h"

namespace {
// The snippet's marks (MessageHit::kMatchStart/End) as bold; the rest escaped.
QString snippetHtml(const QString& snippet) {
  QString html = snippet.toHtmlEscaped();
  html.replace(MessageHit::kMatchStart, QStringLiteral("<b>")).replace(MessageHit::kMatchEnd, QStringLiteral("</b>"));
  return html;
}
}  // namespace

ChatSearchResults::ChatSearchResults(QWidget* parent) : QListWidget(parent) {
  setObjectName(QStringLiteral("searchResults"));
  setWordWrap(true);
  setUniformItemSizes(false);
  auto open = [this](QListWidgetItem* item) {
    const ChatController::SearchResult r = result(row(item));
    if (r.chat >= 0) emit resultActivated(r.chat, r.message);
  };
  connect(this, &QListWidget::itemActivated, this, open);  // Enter (and a double-click)
  connect(this, &QListWidget::itemClicked, this, open);
}

ChatController::SearchResult ChatSearchResults::result(int row) const {
  return row >= 0 && row < m_results.size() ? m_results[row] : ChatController::SearchResult{};
}

void ChatSearchResults::showResults(const QVector<ChatController::SearchResult>& results,
                                    const std::function<QString(ChatId)>& titleOf, const QString& error) {
  clear();
  m_results = results;
  auto addRow = [this](const QString& html, const QString& plain, bool enabled) {
    // The label draws the text; the item's own would show through a selected row.
    auto* item = new QListWidgetItem(this);
    item->setData(Qt::AccessibleTextRole, plain);
    item->setToolTip(plain);
    if (!enabled) item->setFlags(Qt::NoItemFlags);
    auto* label = new QLabel(html, this);
    label->setWordWrap(true);
    label->setTextFormat(Qt::RichText);
    label->setContentsMargins(4, 3, 4, 3);
    label->setAttribute(Qt::WA_TransparentForMouseEvents);  // the row takes the clicks
    item->setSizeHint(QSize(0, label->heightForWidth(std::max(viewport()->width() - 8, 120)) + 2));
    setItemWidget(item, label);
  };
  for (const ChatController::SearchResult& r : results) {
    const QString title = titleOf(r.chat).toHtmlEscaped();
    if (r.message < 0) {
      addRow(tr("<b>%1</b><br><small>title</small>").arg(title), titleOf(r.chat), true);
    } else {
      QString plain = r.snippet;
      plain.remove(MessageHit::kMatchStart).remove(MessageHit::kMatchEnd);
      addRow(tr("<small>%1 · message %2</small><br>%3").arg(title).arg(r.message + 1).arg(snippetHtml(r.snippet)), plain, true);
    }
  }
  if (results.isEmpty()) {
    m_results.clear();
    addRow(error.isEmpty() ? tr("<i>No chat holds these words.</i>") : tr("<i>Search failed: %1</i>").arg(error.toHtmlEscaped()),
           QString(), false);
  }
  if (count() > 0 && !results.isEmpty()) setCurrentRow(0);
}
