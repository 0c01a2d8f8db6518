#pragma once
// The chat list on the left: every chat, forks indented under the chat they came from with
// "fork of X at message k", so the fork tree reads at a glance. A chat that is replying is
// marked; selecting a chat only switches the view (replies go on).

#include <QTreeWidget>

#include "ui/chat/chat_record.h"

class ChatListWidget : public QTreeWidget {
  Q_OBJECT
 public:
  explicit ChatListWidget(QWidget* parent = nullptr);

  void addChat(const ChatRecord& chat, const QString& parentTitle);  // parent added first
  void removeChat(ChatId id);
  void setTitle(ChatId id, const QString& title);
  void setReplying(ChatId id, bool replying);
  void select(ChatId id);
  ChatId current() const;
  // Chats in the order shown (depth first), for next/previous.
  QVector<ChatId> orderShown() const;
  QTreeWidgetItem* item(ChatId id) const;

 signals:
  void chatSelected(ChatId id);

 private:
  static constexpr int kIdRole = Qt::UserRole;
  static constexpr int kTitleRole = Qt::UserRole + 1;
  static constexpr int kForkNoteRole = Qt::UserRole + 2;  // "fork of X at message k"
  static constexpr int kReplyingRole = Qt::UserRole + 3;
  void refreshText(QTreeWidgetItem* item);
};
