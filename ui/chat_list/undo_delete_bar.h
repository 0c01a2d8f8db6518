#pragma once
// Under the chat list after a chat is deleted: what went ("Deleted “Colours”: its 2 messages and
// the KV blocks it held; its fork stays") and Undo, for a few seconds. Deleting asks nothing
// first; this is the way back (the ChatController keeps the chat deleted last).

#include <QTimer>
#include <QWidget>

#include "appcore/chat/chat_types.h"

class ChatController;
class QLabel;
class QPushButton;

class UndoDeleteBar : public QWidget {
  Q_OBJECT
 public:
  static constexpr int kShownMs = 10000;

  explicit UndoDeleteBar(QWidget* parent = nullptr);
  // What deleting chat id takes and what it leaves, in one sentence (before it goes).
  static QString sentence(const ChatController& chats, ChatId id);
  // Shown for kShownMs with that sentence; Undo asks for chat id back.
  void offer(ChatId id, const QString& sentence);
  ChatId offered() const { return m_id; }

 signals:
  void undoRequested(ChatId id);

 private:
  QLabel* m_text = nullptr;
  QPushButton* m_undo = nullptr;
  QTimer m_hide;
  ChatId m_id = -1;
};
