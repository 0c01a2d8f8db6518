// The main window's chat panel: the transcript (or the compare columns), the message input and
// the row under it (compare controls, the chat's sampling, the turn's actions), and the actions'
// drawn icons.
#include "ui/shell/main_window.h"

#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QStackedWidget>
#include <QToolButton>
#include <QVBoxLayout>

#include "ui/chat/compare_view.h"
#include "appcore/chat/reply_thinking.h"
#include "ui/chat/transcript_view.h"
#include "ui/shell/chat_action_row.h"
#include "ui/dialogs/chat_sampling_dialog.h"
#include "ui/dialogs/sampling_form.h"

QWidget* MainWindow::buildChatPanel() {
  auto* panel = new QWidget(this);
  auto* v = new QVBoxLayout(panel);
  m_stack = new QStackedWidget(panel);
  m_transcript = new TranscriptView(m_stack);
  m_compare = new CompareView(m_stack);
  m_stack->addWidget(m_transcript);
  m_stack->addWidget(m_compare);
  v->addWidget(m_stack, 1);
  connectTranscript();
  m_input = new QPlainTextEdit(panel);
  m_input->setObjectName(QStringLiteral("input"));
  m_input->setPlaceholderText(tr("Loading the model…"));
  m_input->setMaximumHeight(90);
  m_input->setTabChangesFocus(true);  // Tab leaves the input, as in any form; a message has no use for tabs
  v->addWidget(m_input);
  v->addWidget(buildActionRow(panel));
  return panel;
}

// What the transcript's links and the compare columns ask for (fork, copy, edit, versions,
// Continue, the context-full choices, a pick).
void MainWindow::connectTranscript() {
  connect(m_transcript, &TranscriptView::forkRequested, this, [this](int k) { forkChat(m_current, k); });
  connect(m_transcript, &TranscriptView::copyRequested, this, [this](int i) {
    if (const ChatController::Chat* c = current(); c && i >= 0 && i < c->record.messages.size())
      QApplication::clipboard()->setText(withoutThinking(c->record.messages[i].content));  // the answer, as copied from any chat app
  });
  connect(m_compare, &CompareView::picked, this, &MainWindow::pickSample);
  connect(m_transcript, &TranscriptView::editRequested, this, [this](int i) {
    const ChatController::Chat* c = current();
    if (!c || i < 0 || i >= c->record.messages.size() || c->replying) return;
    m_editing = i;
    m_input->setPlainText(c->record.messages[i].content);
    m_input->selectAll();
    m_input->setFocus();
    setChatStatus(m_current, tr("Editing message %1: Send makes a new version of the conversation from it (the old one is "
                                "kept); Esc cancels.").arg(i + 1));
  });
  connect(m_transcript, &TranscriptView::versionRequested, this, [this](int i, int delta) {
    if (m_chats->switchVersion(m_current, i, delta)) showCurrent();
    updateControls();
  });
  connect(m_transcript, &TranscriptView::continueRequested, this, [this] {
    QStringList titles;
    if (canStartTurn()) m_chats->continueReply(m_current, nextTurnSettings(titles));
    showCurrent();
    updateControls();
  });
  connect(m_transcript, &TranscriptView::contextChoice, this, [this](const QString& choice) {
    using Choice = ChatController::ContextChoice;
    QStringList titles;
    const TurnSettings settings = nextTurnSettings(titles);
    QString takenBack;
    const Choice kind = choice == QLatin1String("drop")     ? Choice::dropOldest
                        : choice == QLatin1String("recent") ? Choice::newChatFromRecent
                                                            : Choice::cancel;
    const ChatId replying = m_chats->resolveContextFull(m_current, kind, settings, titles, &takenBack);
    if (!takenBack.isEmpty()) m_input->setPlainText(takenBack);
    if (replying >= 0 && replying != m_current) selectChat(replying);
    showCurrent();
    updateControls();
  });
}

// Under the input: the compare controls (samples, Vary settings, Beams, Columns) and the
// chat's buttons (Sampling, Copy, Regenerate, Stop, Send).
ChatActionRow* MainWindow::buildActionRow(QWidget* panel) {
  m_actionRow = new ChatActionRow(panel);
  auto* samplesLabel = new QLabel(tr("Samples:"), panel);
  m_actionRow->addCompareWidget(samplesLabel);
  m_samples = new QSpinBox(panel);
  m_samples->setObjectName(QStringLiteral("samples"));
  m_samples->setRange(1, 4);
  m_samples->setToolTip(tr("More than 1: compare that many replies side by side (the prompt is computed once)"));
  samplesLabel->setBuddy(m_samples);
  m_actionRow->addCompareWidget(m_samples);
  m_varySettings = new QCheckBox(tr("Vary settings"), panel);
  m_varySettings->setObjectName(QStringLiteral("varySettings"));
  m_varySettings->setToolTip(tr("Each compare column samples with its own settings (Columns…); the prompt is still computed once"));
  m_actionRow->addCompareWidget(m_varySettings);
  m_beamSearch = new QCheckBox(tr("Beams"), panel);
  m_beamSearch->setObjectName(QStringLiteral("beamSearch"));
  m_beamSearch->setToolTip(tr("The columns are the most likely replies by beam search (as many beams as samples), best "
                              "first; they share their KV blocks and show when the search ends"));
  m_actionRow->addCompareWidget(m_beamSearch);
  connect(m_varySettings, &QCheckBox::toggled, this, [this](bool on) { if (on) m_beamSearch->setChecked(false); });
  connect(m_beamSearch, &QCheckBox::toggled, this, [this](bool on) { if (on) m_varySettings->setChecked(false); });
  auto* columns = new QPushButton(tr("Columns…"), panel);
  columns->setObjectName(QStringLiteral("editCompareColumns"));
  columns->setToolTip(tr("The sampling settings of each compare column, for \"Vary settings\""));
  connect(columns, &QPushButton::clicked, this, &MainWindow::showCompareColumns);
  m_actionRow->addCompareWidget(columns);
  auto button = [&](const QString& text, const char* name) {
    auto* b = new QToolButton(panel);
    b->setText(text);
    b->setObjectName(QString::fromLatin1(name));
    b->setAutoRaise(false);
    m_actionRow->addAction(b);
    return b;
  };
  m_chatSampling = button(tr("Sampling"), "chatSampling");
  m_copy = button(tr("Copy"), "copy");
  m_regenerate = button(tr("Regenerate"), "regenerate");
  m_stop = button(tr("Stop"), "stop");
  m_send = button(tr("Send"), "send");
  m_copy->setToolTip(tr("Copy the last reply (Ctrl+Shift+C)"));
  m_regenerate->setToolTip(tr("Regenerate the last reply as a new version (Ctrl+R)"));
  m_stop->setToolTip(tr("Stop the reply (Esc)"));
  m_send->setToolTip(tr("Send the message (Ctrl+Enter)"));
  refreshIcons();
  connect(m_chatSampling, &QToolButton::clicked, this, &MainWindow::showChatSampling);
  connect(m_copy, &QToolButton::clicked, this, &MainWindow::copyLastReply);
  connect(m_regenerate, &QToolButton::clicked, this, &MainWindow::regenerate);
  connect(m_stop, &QToolButton::clicked, this, &MainWindow::stop);
  connect(m_send, &QToolButton::clicked, this, &MainWindow::send);
  return m_actionRow;
}

void MainWindow::refreshIcons() {
  // Drawn in the palette's colours: made again when the theme changes.
  m_chatSampling->setIcon(actionIcon(ActionIcon::sampling, QStringLiteral("preferences-other"), m_chatSampling));
  m_copy->setIcon(actionIcon(ActionIcon::copy, QStringLiteral("edit-copy"), m_copy));
  m_regenerate->setIcon(actionIcon(ActionIcon::regenerate, QStringLiteral("view-refresh"), m_regenerate));
  m_stop->setIcon(actionIcon(ActionIcon::stop, QStringLiteral("process-stop"), m_stop));
  m_send->setIcon(actionIcon(ActionIcon::send, QStringLiteral("mail-send"), m_send));
}

void MainWindow::setChatSampling(ChatId id, const std::optional<TurnSettings>& sampling) {
  m_chats->setChatSampling(id, sampling);
  updateControls();
}

void MainWindow::showChatSampling() {
  const ChatRecord* r = chat(m_current);
  if (!r) return;
  auto* dialog = new ChatSamplingDialog(r->title, r->ownSampling, m_session.settings().sampling, this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  connect(dialog, &QDialog::accepted, this, [this, dialog, id = m_current] { setChatSampling(id, dialog->ownSampling()); });
  dialog->open();
}
