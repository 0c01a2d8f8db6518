#pragma once
// "System prompt", under the chat list: the prompt all chats share (empty: the model's
// default), whether the chat shown uses its own and what it is (its editor shown only then),
// and what the chat does when its context is full. A few lines each: the list keeps the room. Edits go to the ChatController as they are typed and are saved once
// typing pauses; a prompt set elsewhere (a lesson) is shown as it changes.

#include <QGroupBox>
#include <QTimer>

#include "appcore/chat/chat_types.h"

class ChatController;
class QCheckBox;
class QComboBox;
class QPlainTextEdit;

class SystemPromptBox : public QGroupBox {
  Q_OBJECT
 public:
  // chats must outlive the box.
  explicit SystemPromptBox(ChatController& chats, QWidget* parent = nullptr);
  void showChat(ChatId id);  // its prompt and policy, shown without counting as an edit

 private:
  void onEdited();
  void showPromptOf(ChatId id);

  ChatController& m_chats;
  ChatId m_shown = -1;
  QTimer m_saveTimer;
  QPlainTextEdit* m_shared = nullptr;
  QCheckBox* m_override = nullptr;
  QPlainTextEdit* m_own = nullptr;
  QComboBox* m_contextPolicy = nullptr;  // the chat's: app default, drop oldest turns, stop and ask
};
