// The chat tree: items keyed by chat id, forks under their parents.
#include "ui/chat/chat_list_widget.h"

ChatListWidget::ChatListWidget(QWidget* parent) : QTreeWidget(parent) {
  setObjectName(QStringLiteral("chatList"));
  setHeaderHidden(true);
  setColumnCount(1);
  setIndentation(14);
  setRootIsDecorated(true);
  connect(this, &QTreeWidget::currentItemChanged, this, [this](QTreeWidgetItem* now, QTreeWidgetItem*) {
    if (now) emit chatSelected(now->data(0, kIdRole).toLongLong());
  });
}

QTreeWidgetItem* ChatListWidget::item(ChatId id) const {
  for (QTreeWidgetItemIterator it(const_cast<ChatListWidget*>(this)); *it; ++it)
    if ((*it)->data(0, kIdRole).toLongLong() == id) return *it;
  return nullptr;
}

void ChatListWidget::addChat(const ChatRecord& chat, const QString& parentTitle) {
  QTreeWidgetItem* parentItem = chat.parentId >= 0 ? item(chat.parentId) : nullptr;
  auto* it = parentItem ? new QTreeWidgetItem(parentItem) : new QTreeWidgetItem(this);
  it->setData(0, kIdRole, chat.id);
  it->setData(0, kTitleRole, chat.title);
  if (chat.parentId >= 0) {
    // A fork at a first question keeps no message: it starts over from the parent's start.
    const QString note = chat.forkedAtMessage > 0 ? tr("fork of %1 at message %2").arg(parentTitle).arg(chat.forkedAtMessage)
                                                  : tr("fork of %1 from its start").arg(parentTitle);
    it->setToolTip(0, note);
    it->setData(0, kForkNoteRole, note);
  }
  refreshText(it);
  if (parentItem) parentItem->setExpanded(true);
}

void ChatListWidget::refreshText(QTreeWidgetItem* it) {
  QString text = it->data(0, kTitleRole).toString();
  const QString forkNote = it->data(0, kForkNoteRole).toString();
  if (!forkNote.isEmpty()) text += QStringLiteral("\n  ") + forkNote;
  if (it->data(0, kReplyingRole).toBool()) text = QStringLiteral("● ") + text;  // replying
  it->setText(0, text);
}

void ChatListWidget::removeChat(ChatId id) { delete item(id); }

void ChatListWidget::setTitle(ChatId id, const QString& title) {
  if (QTreeWidgetItem* it = item(id)) {
    it->setData(0, kTitleRole, title);
    refreshText(it);
  }
}

void ChatListWidget::setReplying(ChatId id, bool replying) {
  if (QTreeWidgetItem* it = item(id)) {
    it->setData(0, kReplyingRole, replying);
    refreshText(it);
  }
}

void ChatListWidget::select(ChatId id) {
  if (QTreeWidgetItem* it = item(id)) setCurrentItem(it);
}

ChatId ChatListWidget::current() const {
  return currentItem() ? currentItem()->data(0, kIdRole).toLongLong() : -1;
}

QVector<ChatId> ChatListWidget::orderShown() const {
  QVector<ChatId> ids;
  for (QTreeWidgetItemIterator it(const_cast<ChatListWidget*>(this)); *it; ++it) ids.append((*it)->data(0, kIdRole).toLongLong());
  return ids;
}
