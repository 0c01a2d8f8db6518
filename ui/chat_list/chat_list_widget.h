#pragma once
// The chat list on the left: every chat, forks indented under the chat they came from with
// "fork of X at message k", so the fork tree reads at a glance. Pinned chats first, then the
// order chosen (most recent activity, creation, or title); forks under a chat in the order they
// were made. A chat that is replying is marked; selecting a chat only switches the view
// (replies go on). F2 or a double-click renames in place (renamed asks the window, which owns
// the chats); the context menu is the window's (contextMenuRequested).

#include <QDateTime>
#include <QTimer>
#include <QTreeWidget>

#include "appcore/chat/chat_record.h"

class ChatListWidget : public QTreeWidget {
  Q_OBJECT
 public:
  enum class Order { recent, created, title };

  explicit ChatListWidget(QWidget* parent = nullptr);

  // Parent added first. A chat that comes back (undo of a delete) takes its forks back under it.
  void addChat(const ChatRecord& chat, const QString& parentTitle);
  // The chat's item goes; its forks (orphans) stay, moved to the top level, their note naming
  // the deleted chat.
  void removeChat(ChatId id);
  void setTitle(ChatId id, const QString& title);
  void setReplying(ChatId id, bool replying);
  void setPinned(ChatId id, bool pinned);
  // The remote server the chat runs on ("host:port", under its title); empty: this machine.
  void setRemoteHost(ChatId id, const QString& host);
  void setLastActive(ChatId id, qint64 msSinceEpoch);
  void setOrder(Order order);
  Order order() const { return m_order; }
  void select(ChatId id);
  ChatId current() const;
  // Chats in the order shown (depth first), for next/previous.
  QVector<ChatId> orderShown() const;
  QTreeWidgetItem* item(ChatId id) const;
  // The title as the list shows it (without the fork note or the marks).
  QString title(ChatId id) const;
  bool isPinned(ChatId id) const;
  // The heading over the chat in the list ("Pinned", "Today", "Yesterday", "Previous 7 days",
  // "Previous 30 days", then the month): over the first chat of each group when sorted by
  // recent activity; empty for the others.
  QString headingAbove(ChatId id) const;
  // Which group a chat last active at `lastActive` is in, seen at `now`.
  static QString dateGroup(const QDateTime& lastActive, const QDateTime& now);
  // The room a heading takes at the top of its chat's row (0 for none), in the list's font.
  static int headingHeight(const QFont& font, const QString& heading);
  void renameCurrent();  // starts the in-place editor on the current chat

 signals:
  void chatSelected(ChatId id);
  void renamed(ChatId id, const QString& title);  // the in-place editor's text, not yet applied
  void contextMenuRequested(ChatId id, const QPoint& globalPos);

 protected:
  void drawRow(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override;

 private:
  friend class ChatListItem;
  static constexpr int kIdRole = Qt::UserRole;
  static constexpr int kTitleRole = Qt::UserRole + 1;
  static constexpr int kForkNoteRole = Qt::UserRole + 2;  // "fork of X at message k"
  static constexpr int kReplyingRole = Qt::UserRole + 3;
  static constexpr int kPinnedRole = Qt::UserRole + 4;
  static constexpr int kLastActiveRole = Qt::UserRole + 5;
  static constexpr int kForkedAtRole = Qt::UserRole + 6;  // the parent's messages kept; -1: not a fork
  static constexpr int kRemoteRole = Qt::UserRole + 7;    // "host:port" of its remote engine, or empty
  static constexpr int kParentRole = Qt::UserRole + 8;    // the chat it was forked from; -1: none
  static constexpr int kGroupRole = Qt::UserRole + 9;     // the heading drawn above it ("Today"); empty: none
  void refreshText(QTreeWidgetItem* item);
  void adoptForks(QTreeWidgetItem* item, const ChatRecord& chat);  // its forks at the top level go under it
  void setForkNote(QTreeWidgetItem* item, const QString& parentTitle);
  static QFont headingFont(QFont font);
  void resort();
  void regroup();  // the headings, after the order or a date changed

  Order m_order = Order::recent;
  QTimer m_dayTimer;  // "Today" becomes "Yesterday" while the app runs
  QTimer m_regroupSoon;
};
