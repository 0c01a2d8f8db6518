// The confirmation before a chat is deleted.
#include "ui/dialogs/delete_chat_box.h"

#include <QAbstractButton>

DeleteChatBox::DeleteChatBox(const ChatController& chats, ChatId id, QWidget* parent)
    : QMessageBox(QMessageBox::Question, tr("Delete chat"), QString(), QMessageBox::Yes | QMessageBox::Cancel, parent) {
  setObjectName(QStringLiteral("confirmDelete"));
  const ChatController::Chat& c = *chats.chat(id);
  int forks = 0;
  for (const auto& [other, o] : chats.chats()) forks += o.record.parentId == id ? 1 : 0;
  setText(tr("Delete “%1”?").arg(c.record.title.toHtmlEscaped()));
  const auto numMessages = c.record.messages.size();
  QString detail = numMessages == 1 ? tr("Its 1 message is deleted from disk and the KV blocks it holds are freed.")
                                    : tr("Its %1 messages are deleted from disk and the KV blocks it holds are freed.").arg(numMessages);
  if (c.replying) detail += QLatin1Char(' ') + tr("Its reply in flight stops.");
  if (forks > 0)
    detail += QLatin1Char(' ') + (forks == 1 ? tr("Its fork stays, as a chat of its own.") : tr("Its %1 forks stay, as chats of their own.").arg(forks));
  setInformativeText(detail);
  setDefaultButton(QMessageBox::Cancel);
  button(QMessageBox::Yes)->setText(tr("Delete"));
}
