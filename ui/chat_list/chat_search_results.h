#pragma once
// What a search over the chats found, in place of the chat list while the search box holds
// words: a chat whose title matched, or a message with the words around its match in bold.
// Enter or a click on one opens it (resultActivated), at that message for a message.

#include <QListWidget>

#include "appcore/session/chat_controller.h"

class ChatSearchResults : public QListWidget {
  Q_OBJECT
 public:
  explicit ChatSearchResults(QWidget* parent = nullptr);
  // titleOf: a chat's title as listed. error: why nothing could be searched ("" when all went well).
  void showResults(const QVector<ChatController::SearchResult>& results, const std::function<QString(ChatId)>& titleOf,
                   const QString& error = QString());
  ChatController::SearchResult result(int row) const;

 signals:
  void resultActivated(ChatId chat, int message);  // message -1: the chat itself (its title matched)

 private:
  QVector<ChatController::SearchResult> m_results;
};
