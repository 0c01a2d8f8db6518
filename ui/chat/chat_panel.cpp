// The chat shown: its transcript or compare columns, the input and the row of actions under it.
#include "ui/chat/chat_panel.h"

#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QEvent>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLocale>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QStackedWidget>
#include <QToolButton>
#include <QVBoxLayout>

#include "appcore/chat/chat_database.h"
#include "appcore/chat/reply_thinking.h"
#include "appcore/session/app_session.h"
#include "ui/chat/chat_action_row.h"
#include "ui/chat/chat_tools_button.h"
#include "ui/chat/compare_view.h"
#include "ui/chat/transcript_view.h"
#include "ui/dialogs/compare_settings_dialog.h"
#include "ui/dialogs/sampling_form.h"

ChatPanel::ChatPanel(AppSession& session, QWidget* parent) : QWidget(parent), m_session(session), m_chats(session.chats()) {
  auto* v = new QVBoxLayout(this);
  m_stack = new QStackedWidget(this);
  m_transcript = new TranscriptView(m_stack);
  m_compare = new CompareView(m_stack);
  m_stack->addWidget(m_transcript);
  m_stack->addWidget(m_compare);
  v->addWidget(m_stack, 1);
  connectTranscript();
  m_input = new QPlainTextEdit(this);
  m_input->setObjectName(QStringLiteral("input"));
  m_input->setPlaceholderText(tr("Loading the model…"));
  m_input->setMaximumHeight(90);
  m_input->setTabChangesFocus(true);  // Tab leaves the input, as in any form; a message has no use for tabs
  v->addWidget(m_input);
  m_draftTokens = new QLabel(this);
  m_draftTokens->setObjectName(QStringLiteral("draftTokens"));
  m_draftTokens->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
  m_draftTokens->setToolTip(tr("The message being typed in tokens, and the chat's tokens with it (what the model reads "
                               "before it replies) against the context"));
  m_draftTokens->setMinimumHeight(m_draftTokens->fontMetrics().height());  // kept when empty: the input does not jump
  v->addWidget(m_draftTokens);
  v->addWidget(buildActionRow());
  m_renderTimer.setSingleShot(true);
  m_renderTimer.setInterval(33);
  connect(&m_renderTimer, &QTimer::timeout, this, &ChatPanel::refresh);
  // The chat shown, redrawn as its turn streams and when it ends; the buttons follow.
  connect(&m_chats, &ChatController::chatChanged, this, [this](ChatId id) {
    if (id != m_current) return;
    refreshSoon();
    updateControls();
  });
  connect(&m_chats, &ChatController::turnEnded, this, [this](ChatId id) {
    if (id != m_current) return;
    refresh();
    updateControls();
  });
  connect(&m_chats, &ChatController::engineChanged, this, [this](ChatId id) {
    if (id == m_current) updateControls();
  });
  m_saveDraftsTimer.setSingleShot(true);
  m_saveDraftsTimer.setInterval(1000);
  connect(&m_saveDraftsTimer, &QTimer::timeout, this, &ChatPanel::saveDrafts);
  connect(m_input, &QPlainTextEdit::textChanged, &m_saveDraftsTimer, qOverload<>(&QTimer::start));
  m_countDraftTimer.setSingleShot(true);
  m_countDraftTimer.setInterval(250);
  connect(&m_countDraftTimer, &QTimer::timeout, this, &ChatPanel::countDraft);
  connect(m_input, &QPlainTextEdit::textChanged, this, [this] {
    if (m_input->document()->isEmpty()) m_draftTokens->clear();  // sent or erased: nothing to count, at once
    m_countDraftTimer.start();
  });
  connect(&m_chats, &ChatController::draftMeasured, this, &ChatPanel::showDraftCount);
}

void ChatPanel::countDraft() {
  const QString text = m_input->toPlainText().trimmed();
  const ChatController::Chat* c = current();
  if (text.isEmpty() || !c || c->record.remote.isSet() || !m_session.hasModel()) return m_draftTokens->clear();
  m_chats.measureDraft(m_current, text);
}

void ChatPanel::showDraftCount(ChatId id, const QString& draft, int draftTokens, int tokensWithDraft) {
  if (id != m_current || draft != m_input->toPlainText().trimmed()) return;  // typed on since: a newer count comes
  const QLocale locale;
  const int context = m_session.contextLength();
  QString text = (draftTokens == 1 ? tr("1 token") : tr("%1 tokens").arg(locale.toString(draftTokens))) +
                 tr(" · %1 / %2 with it").arg(locale.toString(tokensWithDraft), locale.toString(context));
  if (context > 0 && draftTokens >= context) text = tr("⚠ %1: longer than the whole context").arg(text);
  else if (context > 0 && tokensWithDraft > context) text = tr("⚠ %1: past the context").arg(text);
  m_draftTokens->setText(text);
}

namespace {
const QString kDraftsKey = QStringLiteral("ui/drafts");  // {"<chat id>": {"text": ..., "editing": k}}
}  // namespace

void ChatPanel::saveDrafts() {
  m_saveDraftsTimer.stop();
  QHash<ChatId, Draft> all = m_drafts;
  if (current()) all[m_current] = {m_input->toPlainText(), m_editing};
  QJsonObject o;
  for (auto it = all.constBegin(); it != all.constEnd(); ++it)
    if (!it->text.isEmpty()) o[QString::number(it.key())] = QJsonObject{{"text", it->text}, {"editing", it->editing}};
  m_session.database().setSetting(kDraftsKey, QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact)));
}

// Drafts of chats that are gone are not kept (their ids may come back for new chats).
void ChatPanel::restoreDrafts() {
  const QJsonObject o = QJsonDocument::fromJson(m_session.database().setting(kDraftsKey).toUtf8()).object();
  for (auto it = o.constBegin(); it != o.constEnd(); ++it) {
    bool ok = false;
    const ChatId id = it.key().toLongLong(&ok);
    if (ok && m_chats.chat(id)) m_drafts[id] = {it->toObject().value("text").toString(), it->toObject().value("editing").toInt(-1)};
  }
}

// What the transcript's links and the compare columns ask for (fork, copy, edit, versions,
// Continue, the context-full choices, a pick).
void ChatPanel::connectTranscript() {
  connect(m_transcript, &TranscriptView::forkRequested, this, [this](int k) { emit forkRequested(m_current, k); });
  connect(m_transcript, &TranscriptView::copyRequested, this, [this](int i) {
    if (const ChatController::Chat* c = current(); c && i >= 0 && i < c->record.messages.size())
      QApplication::clipboard()->setText(withoutThinking(c->record.messages[i].content));  // the answer, as copied from any chat app
  });
  connect(m_compare, &CompareView::picked, this, &ChatPanel::pickSample);
  connect(m_transcript, &TranscriptView::editRequested, this, [this](int i) {
    const ChatController::Chat* c = current();
    if (!c || i < 0 || i >= c->record.messages.size() || c->replying) return;
    m_editing = i;
    offerText(c->record.messages[i].content);
    emit statusSaid(m_current, tr("Editing message %1: Send makes a new version of the conversation from it (the old one is "
                                  "kept); Esc cancels.").arg(i + 1));
  });
  connect(m_transcript, &TranscriptView::versionRequested, this, [this](int i, int delta) {
    if (m_chats.switchVersion(m_current, i, delta)) refresh();
    updateControls();
  });
  connect(m_transcript, &TranscriptView::continueRequested, this, [this] {
    QStringList titles;
    if (canStartTurn()) m_chats.continueReply(m_current, nextTurnSettings(titles));
    refresh();
    updateControls();
  });
  connect(m_transcript, &TranscriptView::contextChoice, this, &ChatPanel::onContextChoice);
  connect(m_transcript, &TranscriptView::toolCallAnswered, this, [this](const QString& callId, const QString& answer) {
    using Consent = ChatController::ToolConsent;
    const Consent consent = answer == QLatin1String("always") ? Consent::alwaysAllow
                            : answer == QLatin1String("deny") ? Consent::deny
                                                              : Consent::allowOnce;
    m_chats.answerToolCall(m_current, callId, consent);
    refresh();
    updateControls();
  });
  connect(m_transcript, &TranscriptView::toolCallStopRequested, this, [this] { m_chats.stop(m_current); });
}

void ChatPanel::onContextChoice(const QString& choice) {
  using Choice = ChatController::ContextChoice;
  QStringList titles;
  const TurnSettings settings = nextTurnSettings(titles);
  QString takenBack;
  const Choice kind = choice == QLatin1String("drop")     ? Choice::dropOldest
                      : choice == QLatin1String("recent") ? Choice::newChatFromRecent
                                                          : Choice::cancel;
  const ChatId replying = m_chats.resolveContextFull(m_current, kind, settings, titles, &takenBack);
  if (!takenBack.isEmpty()) m_input->setPlainText(takenBack);
  if (replying >= 0 && replying != m_current) emit chatWanted(replying);
  refresh();
  updateControls();
}

// Under the input: the compare controls (samples, Vary settings, Beams, Columns) and the
// chat's buttons (Sampling, Copy, Regenerate, Stop, Send).
ChatActionRow* ChatPanel::buildActionRow() {
  m_actionRow = new ChatActionRow(this);
  auto* samplesLabel = new QLabel(tr("Samples:"), this);
  m_actionRow->addCompareWidget(samplesLabel);
  m_samples = new QSpinBox(this);
  m_samples->setObjectName(QStringLiteral("samples"));
  m_samples->setRange(1, 4);
  m_samples->setToolTip(tr("More than 1: compare that many replies side by side (the prompt is computed once)"));
  samplesLabel->setBuddy(m_samples);
  m_actionRow->addCompareWidget(m_samples);
  m_varySettings = new QCheckBox(tr("Vary settings"), this);
  m_varySettings->setObjectName(QStringLiteral("varySettings"));
  m_varySettings->setToolTip(tr("Each compare column samples with its own settings (Columns…); the prompt is still computed once"));
  m_actionRow->addCompareWidget(m_varySettings);
  m_beamSearch = new QCheckBox(tr("Beams"), this);
  m_beamSearch->setObjectName(QStringLiteral("beamSearch"));
  m_beamSearch->setToolTip(tr("The columns are the most likely replies by beam search (as many beams as samples), best "
                              "first; they share their KV blocks and show when the search ends"));
  m_actionRow->addCompareWidget(m_beamSearch);
  connect(m_varySettings, &QCheckBox::toggled, this, [this](bool on) { if (on) m_beamSearch->setChecked(false); });
  connect(m_beamSearch, &QCheckBox::toggled, this, [this](bool on) { if (on) m_varySettings->setChecked(false); });
  auto* columns = new QPushButton(tr("Columns…"), this);
  columns->setObjectName(QStringLiteral("editCompareColumns"));
  columns->setToolTip(tr("The sampling settings of each compare column, for \"Vary settings\""));
  connect(columns, &QPushButton::clicked, this, &ChatPanel::compareColumnsRequested);
  m_actionRow->addCompareWidget(columns);
  m_tools = new ChatToolsButton(this);
  m_tools->setServers(m_chats.tools());
  m_tools->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  m_actionRow->addCompareWidget(m_tools);
  connect(m_tools, &ChatToolsButton::toolsChanged, this, [this](const ChatTools& tools) {
    if (!m_chats.setChatTools(m_current, tools)) emit statusSaid(m_current, tr("The chat's tools change when its reply has ended."));
    if (!current() || !current()->record.tools.servers.contains(m_forcedTool)) m_forcedTool.clear();
    updateControls();
  });
  connect(m_tools, &ChatToolsButton::forcedToolChosen, this, [this](const QString& function) {
    m_forcedTool = function;
    if (!function.isEmpty())
      emit statusSaid(m_current, tr("The next reply calls %1 (the Tools menu changes it).").arg(function));
    updateControls();
  });
  connect(m_tools, &ChatToolsButton::serversDialogRequested, this, &ChatPanel::toolServersRequested);
  auto button = [&](const QString& text, const char* name) {
    auto* b = new QToolButton(this);
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
  connect(m_chatSampling, &QToolButton::clicked, this, &ChatPanel::chatSamplingRequested);
  connect(m_copy, &QToolButton::clicked, this, &ChatPanel::copyLastReply);
  connect(m_regenerate, &QToolButton::clicked, this, &ChatPanel::regenerate);
  connect(m_stop, &QToolButton::clicked, this, &ChatPanel::stop);
  connect(m_send, &QToolButton::clicked, this, &ChatPanel::send);
  return m_actionRow;
}

void ChatPanel::refreshIcons() {
  // Drawn in the palette's colours: made again when the theme changes.
  m_chatSampling->setIcon(actionIcon(ActionIcon::sampling, QStringLiteral("preferences-other"), m_chatSampling));
  m_tools->setIcon(actionIcon(ActionIcon::tools, QStringLiteral("applications-utilities"), m_tools));
  m_copy->setIcon(actionIcon(ActionIcon::copy, QStringLiteral("edit-copy"), m_copy));
  m_regenerate->setIcon(actionIcon(ActionIcon::regenerate, QStringLiteral("view-refresh"), m_regenerate));
  m_stop->setIcon(actionIcon(ActionIcon::stop, QStringLiteral("process-stop"), m_stop));
  m_send->setIcon(actionIcon(ActionIcon::send, QStringLiteral("mail-send"), m_send));
}

void ChatPanel::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  // Our drawn icons take the new palette's colours (the transcript and the pool view redraw themselves).
  if (event->type() == QEvent::PaletteChange && m_send) refreshIcons();
}

void ChatPanel::showChat(ChatId id) {
  const ChatController::Chat* c = m_chats.chat(id);
  if (!c) return;
  if (id != m_current) {
    // The input is the chat's: what was typed (or being edited) in the other one waits there.
    if (current()) m_drafts[m_current] = {m_input->toPlainText(), m_editing};
    const Draft draft = m_drafts.take(id);
    m_input->setPlainText(draft.text);
    m_input->moveCursor(QTextCursor::End);
    const bool stillAQuestion = draft.editing >= 0 && draft.editing < c->record.messages.size() &&
                                c->record.messages[draft.editing].role == QLatin1String("user");
    m_editing = stillAQuestion ? draft.editing : -1;
  }
  if (id != m_current) m_forcedTool.clear();  // "use this tool" was for the chat it was chosen in
  m_current = id;
  m_countDraftTimer.start();  // its draft counted against its own chat
  refresh();
  updateControls();
}

void ChatPanel::forgetChat(ChatId id) {
  m_drafts.remove(id);
  if (id == m_current) m_current = -1;  // gone: nothing of it is kept as a draft
  m_saveDraftsTimer.start();
}

void ChatPanel::refresh() {
  m_renderTimer.stop();
  const ChatController::Chat* c = current();
  if (!c) return;
  if (c->numSamples > 1 && (c->replying || c->awaitingPick)) {
    if (m_compare->numColumns() != c->numSamples || m_compare->titles() != c->columnTitles || m_stack->currentWidget() != m_compare)
      m_compare->start(c->numSamples, c->columnTitles);
    for (int i = 0; i < c->numSamples; ++i) {
      if (m_compare->text(i) != c->samples[i]) m_compare->setText(i, c->samples[i]);
      if (!c->sampleMetrics[i].isEmpty()) m_compare->setMetrics(i, c->sampleMetrics[i]);
    }
    m_compare->setQuestion(c->record.messages.isEmpty() ? QString() : c->record.messages.last().content);
    for (int i = 0; i < c->numSamples; ++i) m_compare->setPickable(i, c->canPick(i));
    m_stack->setCurrentWidget(m_compare);
  } else {
    PendingToolCall pending;
    if (c->toolCall) pending = {c->toolCall->callId, c->toolCall->server, c->toolCall->tool, c->toolCall->running, c->toolCall->progress};
    m_transcript->showChat(c->record, c->replying, c->contextFullTokens, c->contextLength, c->record.lastError, pending);
    m_stack->setCurrentWidget(m_transcript);
  }
}

void ChatPanel::refreshSoon() {
  if (!m_renderTimer.isActive()) m_renderTimer.start();
}

void ChatPanel::updateControls() {
  const ChatController::Chat* c = current();
  const bool busy = c && (c->replying || c->awaitingPick);
  const bool hasReply = c && !c->record.messages.isEmpty() && c->record.messages.last().role == QLatin1String("assistant");
  const bool ready = engineReady(c);
  m_input->setEnabled(ready);
  m_send->setEnabled(ready && c && !busy);
  m_stop->setEnabled(c && c->replying);
  m_regenerate->setEnabled(ready && c && !busy && !c->record.messages.isEmpty());
  m_copy->setEnabled(hasReply);
  m_chatSampling->setEnabled(c != nullptr);
  m_tools->setEnabled(c != nullptr && !busy);
  m_tools->showChat(c ? c->record.tools : ChatTools{}, m_forcedTool);
  const bool own = c && c->record.ownSampling;
  m_chatSampling->setText(own ? tr("Sampling: this chat's") : tr("Sampling"));
  m_chatSampling->setToolTip((own ? tr("This chat samples with its own settings: %1") : tr("This chat samples with the app's defaults: %1"))
                                 .arg(describeChatSampling(own ? *c->record.ownSampling : m_session.settings().sampling)) +
                             tr(" (click to change)"));
  m_actionRow->fit();
}

void ChatPanel::setTurnsHeld(bool held) {
  m_turnsHeld = held;
  updateControls();
}

void ChatPanel::setPlaceholder(const QString& text) { m_input->setPlaceholderText(text); }

void ChatPanel::focusInput() { m_input->setFocus(); }

void ChatPanel::offerText(const QString& text) {
  m_input->setPlainText(text);
  m_input->selectAll();
  m_input->setFocus();
}

void ChatPanel::revealMessage(int message, const QStringList& words) { m_transcript->revealMessage(message, words); }

void ChatPanel::setVarySettings(bool on) { m_varySettings->setChecked(on); }

bool ChatPanel::engineReady(const ChatController::Chat* c) const {
  // A chat on a remote engine needs no local model.
  return (c && c->record.remote.isSet()) || (m_session.hasModel() && !m_turnsHeld);
}

bool ChatPanel::canStartTurn() const {
  const ChatController::Chat* c = current();
  return c && !c->replying && engineReady(c);
}

TurnSettings ChatPanel::nextTurnSettings(QStringList& columnTitles) const {
  const AppSettings& app = m_session.settings();
  const int n = m_samples->value();
  TurnSettings settings = app.sampling;
  settings.numSamples = n;
  settings.contextPolicy = app.contextPolicy;  // the chat's own, when it has one, wins
  columnTitles.clear();
  if (n > 1 && m_beamSearch->isChecked()) {
    settings.beamSearch = true;
    for (int i = 0; i < n; ++i) columnTitles << (i == 0 ? tr("beam 1 (most likely)") : tr("beam %1").arg(i + 1));
  } else if (n > 1 && m_varySettings->isChecked()) {
    settings = app.variedTurn(n);
    settings.contextPolicy = app.contextPolicy;
    for (const TurnSettings& column : settings.columns) columnTitles << describeSampling(column);
  }
  return settings;
}

void ChatPanel::send() {
  const QString text = m_input->toPlainText().trimmed();
  if (!canStartTurn() || text.isEmpty()) return;
  m_input->clear();
  QStringList titles;
  TurnSettings settings = nextTurnSettings(titles);
  settings.toolChoice = std::exchange(m_forcedTool, QString());  // "use this tool" is for one message
  if (m_editing >= 0) m_chats.edit(m_current, std::exchange(m_editing, -1), text, settings, titles);
  else m_chats.send(m_current, text, settings, titles);
  m_samples->setValue(1);  // a compare is this message's; the next one gets one reply unless asked again
  refresh();
  updateControls();
}

void ChatPanel::stop() {
  if (m_editing >= 0) {  // Esc while editing: the edit is dropped, the conversation as it was
    m_editing = -1;
    m_input->clear();
    emit statusSaid(m_current, QString());
    return;
  }
  m_chats.stop(m_current);
}

void ChatPanel::regenerate() {
  if (!canStartTurn()) return;
  QStringList titles;
  const TurnSettings settings = nextTurnSettings(titles);
  m_chats.regenerate(m_current, settings, titles);
  refresh();
  updateControls();
}

void ChatPanel::copyLastReply() {
  const ChatController::Chat* c = current();
  if (c && !c->record.messages.isEmpty()) QApplication::clipboard()->setText(withoutThinking(c->record.messages.last().content));
}

void ChatPanel::pickSample(int sample) {
  if (!m_chats.pick(m_current, sample)) return;
  refresh();
  updateControls();
}
