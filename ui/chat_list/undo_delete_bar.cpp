// The few seconds after a delete, with Undo.
#include "ui/chat_list/undo_delete_bar.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>

#include "appcore/session/chat_controller.h"

UndoDeleteBar::UndoDeleteBar(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("undoDelete"));
  auto* h = new QHBoxLayout(this);
  h->setContentsMargins(4, 2, 4, 2);
  m_text = new QLabel(this);
  m_text->setObjectName(QStringLiteral("undoDeleteText"));
  m_text->setWordWrap(true);
  m_text->setTextFormat(Qt::PlainText);
  h->addWidget(m_text, 1);
  m_undo = new QPushButton(tr("Undo"), this);
  m_undo->setObjectName(QStringLiteral("undoDeleteButton"));
  m_undo->setToolTip(tr("Brings the chat back with its messages and settings. Its KV blocks were freed: its next turn "
                        "reads it again, the prefix cache serving what it can."));
  h->addWidget(m_undo, 0, Qt::AlignTop);
  connect(m_undo, &QPushButton::clicked, this, [this] {
    m_hide.stop();
    hide();
    if (m_id >= 0) emit undoRequested(std::exchange(m_id, -1));
  });
  m_hide.setSingleShot(true);
  m_hide.setInterval(kShownMs);
  connect(&m_hide, &QTimer::timeout, this, [this] {
    hide();
    m_id = -1;
  });
  hide();
}

QString UndoDeleteBar::sentence(const ChatController& chats, ChatId id) {
  const ChatController::Chat* c = chats.chat(id);
  if (!c) return {};
  int forks = 0;
  for (const auto& [other, o] : chats.chats()) forks += o.record.parentId == id ? 1 : 0;
  const auto numMessages = c->record.messages.size();
  QString s = numMessages == 1 ? tr("Deleted “%1”: its 1 message and the KV blocks it held.").arg(c->record.title)
                               : tr("Deleted “%1”: its %2 messages and the KV blocks it held.").arg(c->record.title).arg(numMessages);
  if (c->replying) s += QLatin1Char(' ') + tr("Its reply in flight stopped.");
  if (forks > 0)
    s += QLatin1Char(' ') + (forks == 1 ? tr("Its fork stays, as a chat of its own.") : tr("Its %1 forks stay, as chats of their own.").arg(forks));
  return s;
}

void UndoDeleteBar::offer(ChatId id, const QString& sentence) {
  m_id = id;
  m_text->setText(sentence);
  show();
  m_hide.start();
}
