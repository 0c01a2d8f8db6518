#pragma once
// The left of the window: "New chat", the search box over the chat list (its results in the
// list's place while it holds words), and the list itself, which mirrors the ChatController's
// chats (added, renamed, replying, pinned, moved to a remote engine, removed). The order the
// list is sorted in is saved in the chat database.

#include <QTimer>
#include <QWidget>

#include "appcore/chat/chat_types.h"
#include "ui/chat_list/chat_list_widget.h"

class ChatController;
class ChatDatabase;
class ChatSearchResults;
class UndoDeleteBar;
class QLineEdit;
class QMenu;
class QStackedWidget;

class ChatListPanel : public QWidget {
  Q_OBJECT
 public:
  // chats and db must outlive the panel.
  ChatListPanel(ChatController& chats, ChatDatabase& db, QWidget* parent = nullptr);

  ChatListWidget* list() const { return m_list; }
  void setOrder(ChatListWidget::Order order);  // saved for the next start
  void addSortMenu(QMenu* menu);               // "Sort chats by": recent activity, creation, title
  void focusSearch();
  void clearSearch();
  QStringList searchWords() const;
  // Deletes chat id (asking nothing) and offers Undo under the list for a few seconds.
  void deleteWithUndo(ChatId id);

 signals:
  void newChatRequested();
  void chatSelected(ChatId id);
  void searchResultOpened(ChatId chat, int message);  // message -1: the chat itself
  // Chat id left the list; next is the chat that took its place there (else the one before
  // it), -1 when the list is empty.
  void chatRemoved(ChatId id, ChatId next);
  void contextMenuRequested(const QPoint& globalPos);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;  // the search box's Esc and Down

 private:
  void connectChats();
  void addChat(ChatId id);
  void removeChat(ChatId id);
  void runSearch();

  ChatController& m_chats;
  ChatDatabase& m_db;
  ChatListWidget* m_list = nullptr;
  QLineEdit* m_search = nullptr;
  ChatSearchResults* m_searchResults = nullptr;
  QStackedWidget* m_listStack = nullptr;  // the chat list, or the search's results
  UndoDeleteBar* m_undoDelete = nullptr;
  QTimer m_searchTimer;                   // searches once typing pauses
};
