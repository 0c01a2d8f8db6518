// The shared and the chat's own system prompt, and the chat's context policy.
#include "ui/chat/system_prompt_box.h"

#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QPlainTextEdit>
#include <QTextDocument>
#include <QVBoxLayout>

#include "appcore/session/chat_controller.h"

namespace {
// A prompt editor a few lines high (it scrolls past them): the chat list above keeps the room.
void fitLines(QPlainTextEdit* edit) {
  constexpr int kLines = 3;
  const int frame = 2 * edit->frameWidth() + static_cast<int>(2 * edit->document()->documentMargin());
  edit->setFixedHeight(edit->fontMetrics().lineSpacing() * kLines + frame);
}
}  // namespace

SystemPromptBox::SystemPromptBox(ChatController& chats, QWidget* parent) : QGroupBox(tr("System prompt"), parent), m_chats(chats) {
  auto* pv = new QVBoxLayout(this);
  auto* sharedLabel = new QLabel(tr("Shared by all chats (empty: the model's default):"), this);
  sharedLabel->setWordWrap(true);
  pv->addWidget(sharedLabel);
  m_shared = new QPlainTextEdit(this);
  m_shared->setObjectName(QStringLiteral("sharedSystemPrompt"));
  fitLines(m_shared);
  pv->addWidget(m_shared);
  m_override = new QCheckBox(tr("This chat uses its own:"), this);
  m_override->setObjectName(QStringLiteral("overrideSystemPrompt"));
  pv->addWidget(m_override);
  m_own = new QPlainTextEdit(this);
  m_own->setObjectName(QStringLiteral("chatSystemPrompt"));
  m_own->setEnabled(false);
  m_own->setVisible(false);  // shown while the chat uses its own
  fitLines(m_own);
  pv->addWidget(m_own);
  auto* policyRow = new QVBoxLayout();  // one above the other: the dock may be narrow
  policyRow->setSpacing(2);
  policyRow->addWidget(new QLabel(tr("When the context is full:"), this));
  m_contextPolicy = new QComboBox(this);
  m_contextPolicy->setObjectName(QStringLiteral("contextPolicy"));
  m_contextPolicy->addItem(tr("App default"), static_cast<int>(ContextPolicy::appDefault));
  m_contextPolicy->addItem(tr("Drop the oldest turns"), static_cast<int>(ContextPolicy::dropOldest));
  m_contextPolicy->addItem(tr("Stop and ask"), static_cast<int>(ContextPolicy::stopAndAsk));
  m_contextPolicy->setToolTip(tr("This chat's choice when it outgrows the model's context: drop its oldest turns (the system "
                                 "prompt stays; the dropped turns stay visible, greyed), or stop and ask"));
  policyRow->addWidget(m_contextPolicy);
  pv->addLayout(policyRow);
  connect(m_contextPolicy, &QComboBox::activated, this, [this] {
    m_chats.setContextPolicy(m_shown, static_cast<ContextPolicy>(m_contextPolicy->currentData().toInt()));
  });
  {
    const QSignalBlocker quiet(m_shared);  // shown, not edited
    m_shared->setPlainText(m_chats.sharedSystemPrompt());
  }
  connect(m_shared, &QPlainTextEdit::textChanged, this, &SystemPromptBox::onEdited);
  connect(m_own, &QPlainTextEdit::textChanged, this, &SystemPromptBox::onEdited);
  connect(m_override, &QCheckBox::toggled, this, &SystemPromptBox::onEdited);
  m_saveTimer.setSingleShot(true);
  m_saveTimer.setInterval(400);
  connect(&m_saveTimer, &QTimer::timeout, this, [this] { m_chats.saveSystemPrompts(m_shown); });
  // A prompt set by someone other than these editors (a lesson): they show it.
  connect(&m_chats, &ChatController::systemPromptChanged, this, [this](ChatId id) {
    if (id == m_shown) showPromptOf(id);
  });
}

void SystemPromptBox::showChat(ChatId id) {
  const ChatController::Chat* c = m_chats.chat(id);
  if (!c) return;
  if (m_saveTimer.isActive() && id != m_shown) m_chats.saveSystemPrompts(m_shown);  // typed just before the switch
  m_shown = id;
  showPromptOf(id);
  const QSignalBlocker quiet(m_contextPolicy);
  m_contextPolicy->setCurrentIndex(m_contextPolicy->findData(static_cast<int>(c->record.contextPolicy)));
}

void SystemPromptBox::showPromptOf(ChatId id) {
  const ChatController::Chat* c = m_chats.chat(id);
  if (!c) return;
  const QSignalBlocker quiet1(m_override), quiet2(m_own);
  if (m_override->isChecked() != c->record.overridesSystemPrompt) m_override->setChecked(c->record.overridesSystemPrompt);
  if (m_own->toPlainText() != c->record.systemPrompt) m_own->setPlainText(c->record.systemPrompt);
  m_own->setEnabled(c->record.overridesSystemPrompt);
  m_own->setVisible(c->record.overridesSystemPrompt);
}

void SystemPromptBox::onEdited() {
  m_chats.setSharedSystemPrompt(m_shared->toPlainText());
  m_chats.setChatSystemPrompt(m_shown, m_override->isChecked(), m_own->toPlainText());
  m_own->setEnabled(m_override->isChecked());
  m_own->setVisible(m_override->isChecked());
  m_saveTimer.start();
}
