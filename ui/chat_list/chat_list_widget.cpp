// The chat tree: items keyed by chat id, forks under their parents, sorted by ChatListItem's
// order, titles edited in place through a delegate that edits the title alone.
#include "ui/chat_list/chat_list_widget.h"

#include <QLineEdit>
#include <QLocale>
#include <QPainter>
#include <QStyledItemDelegate>

namespace {

constexpr int kRowPadding = 3;  // above and below each chat: rows that breathe

// Sizes each chat's row with a little room, and a group's heading ("Today") above its first
// chat (ChatListWidget::drawRow draws it). The in-place editor holds the title (not the shown
// text with its fork note and marks), and its result goes to the window as a request: the
// ChatController decides what the title is.
class TitleDelegate : public QStyledItemDelegate {
 public:
  TitleDelegate(ChatListWidget* list, int idRole, int titleRole, int groupRole)
      : QStyledItemDelegate(list), m_list(list), m_idRole(idRole), m_titleRole(titleRole), m_groupRole(groupRole) {}

  QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override {
    QSize size = QStyledItemDelegate::sizeHint(option, index);
    size.rheight() += 2 * kRowPadding + headingHeight(option, index);
    return size;
  }
  void updateEditorGeometry(QWidget* editor, const QStyleOptionViewItem& option, const QModelIndex& index) const override {
    QStyleOptionViewItem item = option;
    item.rect.setTop(item.rect.top() + headingHeight(option, index));
    QStyledItemDelegate::updateEditorGeometry(editor, item, index);
  }
  void setEditorData(QWidget* editor, const QModelIndex& index) const override {
    if (auto* line = qobject_cast<QLineEdit*>(editor)) {
      line->setText(index.data(m_titleRole).toString());
      line->selectAll();
    }
  }
  void setModelData(QWidget* editor, QAbstractItemModel*, const QModelIndex& index) const override {
    if (auto* line = qobject_cast<QLineEdit*>(editor)) emit m_list->renamed(index.data(m_idRole).toLongLong(), line->text());
  }

 private:
  int headingHeight(const QStyleOptionViewItem& option, const QModelIndex& index) const {
    return ChatListWidget::headingHeight(option.font, index.data(m_groupRole).toString());
  }

  ChatListWidget* m_list;
  int m_idRole, m_titleRole, m_groupRole;
};

}  // namespace

// Sorting: pinned chats first, then the list's order among chats at the top level; forks keep
// the order they were made in (ids grow) under their parent.
class ChatListItem : public QTreeWidgetItem {
 public:
  using QTreeWidgetItem::QTreeWidgetItem;
  bool operator<(const QTreeWidgetItem& other) const override {
    if (parent()) return id(*this) < id(other);
    const auto* list = static_cast<const ChatListWidget*>(treeWidget());
    return before(*this, other, list ? list->order() : ChatListWidget::Order::created);
  }
  // Whether chat a is listed before chat b, both at the top level.
  static bool before(const QTreeWidgetItem& a, const QTreeWidgetItem& b, ChatListWidget::Order order) {
    const bool pinned = a.data(0, ChatListWidget::kPinnedRole).toBool(), otherPinned = b.data(0, ChatListWidget::kPinnedRole).toBool();
    if (pinned != otherPinned) return pinned;
    switch (order) {
      case ChatListWidget::Order::recent: {
        const qint64 ta = a.data(0, ChatListWidget::kLastActiveRole).toLongLong();
        const qint64 tb = b.data(0, ChatListWidget::kLastActiveRole).toLongLong();
        if (ta != tb) return ta > tb;
        return id(a) > id(b);
      }
      case ChatListWidget::Order::title: {
        const int c = a.data(0, ChatListWidget::kTitleRole).toString().localeAwareCompare(b.data(0, ChatListWidget::kTitleRole).toString());
        if (c != 0) return c < 0;
        break;
      }
      case ChatListWidget::Order::created: break;
    }
    return id(a) < id(b);
  }

 private:
  static ChatId id(const QTreeWidgetItem& i) { return i.data(0, ChatListWidget::kIdRole).toLongLong(); }
};

ChatListWidget::ChatListWidget(QWidget* parent) : QTreeWidget(parent) {
  setObjectName(QStringLiteral("chatList"));
  setHeaderHidden(true);
  setColumnCount(1);
  setIndentation(14);
  setRootIsDecorated(true);
  setItemDelegate(new TitleDelegate(this, kIdRole, kTitleRole, kGroupRole));
  setEditTriggers(QAbstractItemView::EditKeyPressed | QAbstractItemView::DoubleClicked);
  setExpandsOnDoubleClick(false);  // a double-click renames
  setContextMenuPolicy(Qt::CustomContextMenu);
  connect(this, &QTreeWidget::currentItemChanged, this, [this](QTreeWidgetItem* now, QTreeWidgetItem*) {
    if (now) emit chatSelected(now->data(0, kIdRole).toLongLong());
  });
  connect(this, &QWidget::customContextMenuRequested, this, [this](const QPoint& pos) {
    QTreeWidgetItem* it = itemAt(pos);
    if (!it) return;
    setCurrentItem(it);
    emit contextMenuRequested(it->data(0, kIdRole).toLongLong(), viewport()->mapToGlobal(pos));
  });
  m_dayTimer.setInterval(10 * 60 * 1000);
  connect(&m_dayTimer, &QTimer::timeout, this, &ChatListWidget::regroup);
  m_dayTimer.start();
  // Many chats added at once (a start restores them all) are grouped once, after the last.
  m_regroupSoon.setSingleShot(true);
  m_regroupSoon.setInterval(0);
  connect(&m_regroupSoon, &QTimer::timeout, this, &ChatListWidget::regroup);
}

QString ChatListWidget::dateGroup(const QDateTime& lastActive, const QDateTime& now) {
  const qint64 days = lastActive.date().daysTo(now.date());
  if (days <= 0) return tr("Today");
  if (days == 1) return tr("Yesterday");
  if (days < 7) return tr("Previous 7 days");
  if (days < 30) return tr("Previous 30 days");
  return QLocale().toString(lastActive.date(), QStringLiteral("MMMM yyyy"));
}

void ChatListWidget::regroup() {
  const QDateTime now = QDateTime::currentDateTime();
  QString previous;
  for (int i = 0; i < topLevelItemCount(); ++i) {
    QTreeWidgetItem* it = topLevelItem(i);
    QString group;
    if (it->data(0, kPinnedRole).toBool()) group = tr("Pinned");
    else if (m_order == Order::recent) group = dateGroup(QDateTime::fromMSecsSinceEpoch(it->data(0, kLastActiveRole).toLongLong()), now);
    else if (!previous.isEmpty()) group = tr("Other chats");  // under the pinned ones
    const QString heading = group == previous ? QString() : group;
    if (it->data(0, kGroupRole).toString() != heading) it->setData(0, kGroupRole, heading);
    previous = group;
  }
}

QFont ChatListWidget::headingFont(QFont font) {
  font.setBold(true);
  font.setPointSizeF(font.pointSizeF() * 0.85);
  return font;
}

int ChatListWidget::headingHeight(const QFont& font, const QString& heading) {
  return heading.isEmpty() ? 0 : QFontMetrics(headingFont(font)).height() + 8;
}

// A heading takes the top of its chat's row: drawn there, across the whole width, and the row
// itself (branch marks, selection, text) below it.
void ChatListWidget::drawRow(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const {
  const QString heading = index.data(kGroupRole).toString();
  const int h = headingHeight(option.font, heading);
  if (h == 0) return QTreeWidget::drawRow(painter, option, index);
  QRect top = option.rect;
  top.setLeft(0);
  top.setHeight(h);
  painter->save();
  painter->setFont(headingFont(option.font));
  painter->setPen(option.palette.color(QPalette::PlaceholderText));
  painter->drawText(top.adjusted(6, 0, -4, -2), Qt::AlignLeft | Qt::AlignBottom, heading);
  painter->restore();
  QStyleOptionViewItem below = option;
  below.rect.setTop(option.rect.top() + h);
  QTreeWidget::drawRow(painter, below, index);
}

QString ChatListWidget::headingAbove(ChatId id) const {
  const QTreeWidgetItem* it = item(id);
  return it ? it->data(0, kGroupRole).toString() : QString();
}

QTreeWidgetItem* ChatListWidget::item(ChatId id) const {
  for (QTreeWidgetItemIterator it(const_cast<ChatListWidget*>(this)); *it; ++it)
    if ((*it)->data(0, kIdRole).toLongLong() == id) return *it;
  return nullptr;
}

void ChatListWidget::setForkNote(QTreeWidgetItem* it, const QString& parentTitle) {
  const int forkedAt = it->data(0, kForkedAtRole).toInt();
  if (forkedAt < 0) return;
  // A fork at a first question keeps no message: it starts over from the parent's start.
  const QString note = forkedAt > 0 ? tr("fork of %1 at message %2").arg(parentTitle).arg(forkedAt)
                                    : tr("fork of %1 from its start").arg(parentTitle);
  it->setToolTip(0, note);
  it->setData(0, kForkNoteRole, note);
}

void ChatListWidget::addChat(const ChatRecord& chat, const QString& parentTitle) {
  QTreeWidgetItem* parentItem = chat.parentId >= 0 ? item(chat.parentId) : nullptr;
  auto* it = new ChatListItem();
  it->setFlags(it->flags() | Qt::ItemIsEditable);
  it->setData(0, kIdRole, chat.id);
  it->setData(0, kTitleRole, chat.title);
  it->setData(0, kPinnedRole, chat.pinned);
  it->setData(0, kLastActiveRole, chat.lastActive);
  it->setData(0, kForkedAtRole, chat.parentId >= 0 ? chat.forkedAtMessage : -1);
  it->setData(0, kParentRole, chat.parentId);
  setForkNote(it, parentTitle);
  refreshText(it);
  if (parentItem) {
    parentItem->addChild(it);  // the newest fork: its id is the largest
    parentItem->setExpanded(true);
  } else {
    // In its place, so that restoring many chats never sorts the list again for each.
    int at = topLevelItemCount();
    for (int i = 0; i < topLevelItemCount(); ++i)
      if (ChatListItem::before(*it, *topLevelItem(i), m_order)) {
        at = i;
        break;
      }
    insertTopLevelItem(at, it);
    m_regroupSoon.start();
  }
  adoptForks(it, chat);
}

void ChatListWidget::adoptForks(QTreeWidgetItem* it, const ChatRecord& chat) {
  const QSignalBlocker block(this);  // the selection stays where it is
  QTreeWidgetItem* selected = currentItem();
  for (int i = topLevelItemCount() - 1; i >= 0; --i) {
    if (topLevelItem(i) == it || topLevelItem(i)->data(0, kParentRole).toLongLong() != chat.id) continue;
    QTreeWidgetItem* fork = takeTopLevelItem(i);
    setForkNote(fork, chat.title);
    refreshText(fork);
    it->addChild(fork);
    fork->setExpanded(true);
  }
  it->sortChildren(0, Qt::AscendingOrder);  // forks in the order they were made
  it->setExpanded(true);
  if (selected && currentItem() != selected) setCurrentItem(selected);
}

void ChatListWidget::refreshText(QTreeWidgetItem* it) {
  QString text = it->data(0, kTitleRole).toString();
  const QString forkNote = it->data(0, kForkNoteRole).toString();
  if (!forkNote.isEmpty()) text += QStringLiteral("\n  ") + forkNote;
  if (const QString host = it->data(0, kRemoteRole).toString(); !host.isEmpty()) text += QStringLiteral("\n  ") + tr("on %1").arg(host);
  if (it->data(0, kPinnedRole).toBool()) text = QStringLiteral("★ ") + text;
  if (it->data(0, kReplyingRole).toBool()) text = QStringLiteral("● ") + text;  // replying
  it->setText(0, text);
}

void ChatListWidget::resort() {
  sortItems(0, Qt::AscendingOrder);
  regroup();
}

void ChatListWidget::removeChat(ChatId id) {
  QTreeWidgetItem* it = item(id);
  if (!it) return;
  const QString gone = tr("%1 (deleted)").arg(it->data(0, kTitleRole).toString());
  const bool wasCurrent = currentItem() == it;
  {
    // The item and its children move without the selection following them around.
    const QSignalBlocker block(this);
    const QList<QTreeWidgetItem*> forks = it->takeChildren();
    for (QTreeWidgetItem* f : forks) {
      setForkNote(f, gone);
      refreshText(f);
    }
    addTopLevelItems(forks);
    for (QTreeWidgetItem* f : forks) f->setExpanded(true);
    delete it;
  }
  resort();
  if (wasCurrent) setCurrentItem(nullptr);
}

void ChatListWidget::setTitle(ChatId id, const QString& title) {
  QTreeWidgetItem* it = item(id);
  if (!it) return;
  it->setData(0, kTitleRole, title);
  refreshText(it);
  for (int i = 0; i < it->childCount(); ++i) {
    setForkNote(it->child(i), title);
    refreshText(it->child(i));
  }
  if (m_order == Order::title) resort();
}

void ChatListWidget::setReplying(ChatId id, bool replying) {
  if (QTreeWidgetItem* it = item(id)) {
    it->setData(0, kReplyingRole, replying);
    refreshText(it);
  }
}

void ChatListWidget::setRemoteHost(ChatId id, const QString& host) {
  QTreeWidgetItem* it = item(id);
  if (!it || it->data(0, kRemoteRole).toString() == host) return;
  it->setData(0, kRemoteRole, host);
  refreshText(it);
}

void ChatListWidget::setPinned(ChatId id, bool pinned) {
  if (QTreeWidgetItem* it = item(id)) {
    it->setData(0, kPinnedRole, pinned);
    refreshText(it);
    resort();
  }
}

void ChatListWidget::setLastActive(ChatId id, qint64 msSinceEpoch) {
  if (QTreeWidgetItem* it = item(id)) {
    it->setData(0, kLastActiveRole, msSinceEpoch);
    if (m_order == Order::recent) resort();
  }
}

void ChatListWidget::setOrder(Order order) {
  m_order = order;
  resort();
}

void ChatListWidget::select(ChatId id) {
  if (QTreeWidgetItem* it = item(id)) setCurrentItem(it);
}

ChatId ChatListWidget::current() const {
  return currentItem() ? currentItem()->data(0, kIdRole).toLongLong() : -1;
}

QString ChatListWidget::title(ChatId id) const {
  const QTreeWidgetItem* it = item(id);
  return it ? it->data(0, kTitleRole).toString() : QString();
}

bool ChatListWidget::isPinned(ChatId id) const {
  const QTreeWidgetItem* it = item(id);
  return it && it->data(0, kPinnedRole).toBool();
}

void ChatListWidget::renameCurrent() {
  if (QTreeWidgetItem* it = currentItem()) editItem(it, 0);
}

QVector<ChatId> ChatListWidget::orderShown() const {
  QVector<ChatId> ids;
  for (QTreeWidgetItemIterator it(const_cast<ChatListWidget*>(this)); *it; ++it) ids.append((*it)->data(0, kIdRole).toLongLong());
  return ids;
}
