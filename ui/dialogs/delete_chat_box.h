#pragma once
// "Delete chat?": the question before a chat goes, naming what goes (its messages, from disk,
// and the KV blocks it holds; a reply in flight) and what stays (its forks, as chats of their
// own). Cancel is the default button.

#include <QMessageBox>

#include "appcore/session/chat_controller.h"

class DeleteChatBox : public QMessageBox {
  Q_OBJECT
 public:
  // chat id must exist in chats.
  DeleteChatBox(const ChatController& chats, ChatId id, QWidget* parent = nullptr);
};
