// The main window: layout, actions, and the flow of each chat's turns through the bridge.
#include "ui/shell/main_window.h"

#include <QUrl>
#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QClipboard>
#include <QDockWidget>
#include <QFileInfo>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScreen>
#include <QSpinBox>
#include <QStackedWidget>
#include <QStatusBar>
#include <QToolBar>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>

#include "appcore/session/app_services.h"
#include "ui/shell/chat_action_row.h"
#include "ui/dialogs/sampling_form.h"
#include "appcore/chat/chat_database.h"
#include "ui/chat_list/chat_list_widget.h"
#include "ui/dialogs/compare_settings_dialog.h"
#include "ui/chat/compare_view.h"
#include "appcore/chat/plain_error.h"
#include "appcore/bridge/engine_bridge.h"
#include "ui/lessons/lessons_panel.h"
#include "ui/pool_panel/kv_pool_panel.h"
#include "ui/pool_view/kv_pool_view.h"
#include "ui/library/model_library_dialog.h"
#include "ui/shell/model_loader.h"
#include "ui/shell/status_line.h"
#include "appcore/session/pool_control.h"
#include "appcore/remote/remote_endpoints.h"
#ifdef PAGEDCHAT_HAVE_SERVER
#include "appcore/bridge/local_api_server.h"
#endif
#include "ui/chat/transcript_view.h"

MainWindow::MainWindow(AppServices& services, QWidget* parent)
    : QMainWindow(parent),
      m_session(services.session()),
      m_db(&services.database()),
      m_bridge(services.bridge()),
      m_chats(&m_session.chats()),
      m_remoteEndpoints(&m_session.remoteEndpoints()),
      m_pool(&m_session.pool()),
      m_api(services.apiServer()) {
  setWindowTitle(tr("PagedChat"));
  // 1280x780, or what the screen has room for (a small laptop's 1024x700 would cut it off).
  const QRect room = screen() ? screen()->availableGeometry() : QRect(0, 0, 1280, 780);
  resize(std::min(1280, room.width()), std::min(780, room.height()));
  applySavedTheme();  // before the widgets are made
  m_loader = new ModelLoader(m_session.modelLoad(), this);
  // The settings as the session has them now (a lesson turns the teaching preset on too).
  connect(&m_session, &AppSession::settingsChanged, this, [this] {
    if (auto* teaching = findChild<QAction*>(QStringLiteral("teachingPreset"))) {
      const QSignalBlocker quiet(teaching);
      teaching->setChecked(m_session.settings().teachingPreset);
    }
  });

  auto* chats = new QDockWidget(tr("Chats"), this);
  chats->setObjectName(QStringLiteral("chatsDock"));
  chats->setFeatures(QDockWidget::DockWidgetMovable);
  chats->setWidget(buildLeftPanel());
  addDockWidget(Qt::LeftDockWidgetArea, chats);
  m_chatPanel = buildChatPanel();
  m_central = new QStackedWidget(this);
  m_central->addWidget(m_chatPanel);
  setCentralWidget(m_central);
  buildFileMenu();
  buildChatMenu();
  buildWelcome();
  buildKvDock();
  buildLessonsDock();
  buildActions();
  buildViewMenu();
  buildHelpMenu();
  m_status = new StatusLine(tr("No model"), this);
  m_status->setObjectName(QStringLiteral("status"));
  m_context = new QLabel(this);
  m_context->setObjectName(QStringLiteral("contextUsed"));
  statusBar()->addWidget(m_status, 1);
  statusBar()->addPermanentWidget(m_context);
  statusBar()->addPermanentWidget(m_loader->progressWidget());
  connect(m_loader, &ModelLoader::loadingChanged, this, &MainWindow::updateControls);
  if (!m_db->isOpen()) m_status->setText(tr("Chats will not be saved: %1").arg(m_db->lastError()));
  // A second start on these chats shows this window rather than opening one of its own.
  connect(services.instanceLock(), &InstanceLock::raiseRequested, this, [this] {
    setWindowState((windowState() & ~Qt::WindowMinimized) | Qt::WindowActive);
    show();
    raise();
    activateWindow();
  });

  m_renderTimer.setSingleShot(true);
  m_renderTimer.setInterval(33);
  connect(&m_renderTimer, &QTimer::timeout, this, &MainWindow::showCurrent);
  m_saveSystemPromptTimer.setSingleShot(true);
  m_saveSystemPromptTimer.setInterval(400);
  connect(&m_saveSystemPromptTimer, &QTimer::timeout, this, [this] { m_chats->saveSystemPrompts(m_current); });
  connectBridge();
  connectChats();
  connectPool();

  {
    const QSignalBlocker block(m_sharedPromptEdit);  // shown, not edited
    m_sharedPromptEdit->setPlainText(m_chats->sharedSystemPrompt());
  }
  const QVector<ChatId> restored = m_chats->restore();
  if (restored.isEmpty()) newChat();
  else selectChat(restored.first());
  updateControls();
  restoreApiServer();
}

MainWindow::~MainWindow() = default;

namespace {
const QString kGeometryKey = QStringLiteral("window/geometry");
const QString kStateKey = QStringLiteral("window/state");
}  // namespace

void MainWindow::showEvent(QShowEvent* event) {
  QMainWindow::showEvent(event);
  if (std::exchange(m_shownOnce, true)) return;
  const QByteArray geometry = QByteArray::fromBase64(m_db->setting(kGeometryKey).toLatin1());
  const QByteArray state = QByteArray::fromBase64(m_db->setting(kStateKey).toLatin1());
  if (!geometry.isEmpty() && restoreGeometry(geometry) && restoreState(state)) return;
  // The chat list a fifth of the window, the pool view a quarter: at 1024 px the chat keeps
  // about half, at 1600 px nearly 60 %.
  auto* chats = findChild<QDockWidget*>(QStringLiteral("chatsDock"));
  auto* kv = findChild<QDockWidget*>(QStringLiteral("kvBlocksDock"));
  const int w = width();
  resizeDocks({chats, kv}, {std::clamp(w / 5, 200, 320), std::clamp(w / 4, 280, 460)}, Qt::Horizontal);
}

void MainWindow::closeEvent(QCloseEvent* event) {
  m_db->setSetting(kGeometryKey, QString::fromLatin1(saveGeometry().toBase64()));
  m_db->setSetting(kStateKey, QString::fromLatin1(saveState().toBase64()));
  QMainWindow::closeEvent(event);
}

QWidget* MainWindow::buildLeftPanel() {
  auto* panel = new QWidget(this);
  auto* v = new QVBoxLayout(panel);
  auto* newButton = new QPushButton(tr("New chat"), panel);
  newButton->setObjectName(QStringLiteral("newChat"));
  connect(newButton, &QPushButton::clicked, this, &MainWindow::newChat);
  v->addWidget(newButton);
  v->addWidget(buildChatList(panel), 2);

  auto* prompts = new QGroupBox(tr("System prompt"), panel);
  auto* pv = new QVBoxLayout(prompts);
  auto* sharedLabel = new QLabel(tr("Shared by all chats (empty: the model's default):"), prompts);
  sharedLabel->setWordWrap(true);
  pv->addWidget(sharedLabel);
  m_sharedPromptEdit = new QPlainTextEdit(prompts);
  m_sharedPromptEdit->setObjectName(QStringLiteral("sharedSystemPrompt"));
  pv->addWidget(m_sharedPromptEdit);
  m_overridePrompt = new QCheckBox(tr("This chat uses its own:"), prompts);
  m_overridePrompt->setObjectName(QStringLiteral("overrideSystemPrompt"));
  pv->addWidget(m_overridePrompt);
  m_chatPromptEdit = new QPlainTextEdit(prompts);
  m_chatPromptEdit->setObjectName(QStringLiteral("chatSystemPrompt"));
  m_chatPromptEdit->setEnabled(false);
  pv->addWidget(m_chatPromptEdit);
  auto* policyRow = new QVBoxLayout();  // one above the other: the dock may be narrow
  policyRow->setSpacing(2);
  policyRow->addWidget(new QLabel(tr("When the context is full:"), prompts));
  m_contextPolicy = new QComboBox(prompts);
  m_contextPolicy->setObjectName(QStringLiteral("contextPolicy"));
  m_contextPolicy->addItem(tr("App default"), static_cast<int>(ContextPolicy::appDefault));
  m_contextPolicy->addItem(tr("Drop the oldest turns"), static_cast<int>(ContextPolicy::dropOldest));
  m_contextPolicy->addItem(tr("Stop and ask"), static_cast<int>(ContextPolicy::stopAndAsk));
  m_contextPolicy->setToolTip(tr("This chat's choice when it outgrows the model's context: drop its oldest turns (the system "
                                 "prompt stays; the dropped turns stay visible, greyed), or stop and ask"));
  policyRow->addWidget(m_contextPolicy);
  pv->addLayout(policyRow);
  connect(m_contextPolicy, &QComboBox::activated, this, [this] {
    m_chats->setContextPolicy(m_current, static_cast<ContextPolicy>(m_contextPolicy->currentData().toInt()));
  });
  v->addWidget(prompts, 1);
  connect(m_sharedPromptEdit, &QPlainTextEdit::textChanged, this, &MainWindow::onSystemPromptEdited);
  connect(m_chatPromptEdit, &QPlainTextEdit::textChanged, this, &MainWindow::onSystemPromptEdited);
  connect(m_overridePrompt, &QCheckBox::toggled, this, &MainWindow::onSystemPromptEdited);
  return panel;
}

void MainWindow::buildKvDock() {
  // The KV block-pool view (ui/pool_panel/kv_pool_panel.h) draws the frames of the pool shown (connectPool).
  auto* dock = new QDockWidget(tr("KV blocks"), this);
  dock->setObjectName(QStringLiteral("kvBlocksDock"));
  auto* pool = new KvPoolPanel(dock);
  pool->setObjectName(QStringLiteral("kvPoolPanel"));
  pool->setMinimumWidth(280);
  dock->setWidget(pool);
  addDockWidget(Qt::RightDockWidgetArea, dock);

  auto* engine = addToolBar(tr("Engine"));
  engine->setObjectName(QStringLiteral("engineToolBar"));
  QAction* pause = engine->addAction(tr("Pause engine"));
  pause->setObjectName(QStringLiteral("pauseEngine"));
  pause->setCheckable(true);
  connect(pause, &QAction::toggled, this, &MainWindow::setEnginePaused);
  connect(m_pool, &PoolControl::pausedChanged, pause, &QAction::setChecked);  // a lesson pauses it too
  QAction* step = engine->addAction(tr("Step"));
  step->setObjectName(QStringLiteral("stepEngine"));
  step->setToolTip(tr("Run one engine step (while paused)"));
  connect(step, &QAction::triggered, this, &MainWindow::stepEngine);
  QAction* tenSteps = engine->addAction(tr("Step ×10"));
  tenSteps->setObjectName(QStringLiteral("stepEngine10"));
  tenSteps->setToolTip(tr("Run ten engine steps (while paused), the pool view drawn after each"));
  connect(tenSteps, &QAction::triggered, this, [this] {
    m_pool->step(10);
  });
  QAction* nextEvent = engine->addAction(tr("Next event"));
  nextEvent->setObjectName(QStringLiteral("stepToNextKvEvent"));
  nextEvent->setToolTip(tr("Run engine steps (while paused) until one changes a KV block: an allocation, a share, a "
                           "copy-on-write, a cache hit, an eviction, a preemption or a swap (at most 500 steps)"));
  connect(nextEvent, &QAction::triggered, this, [this] {
    m_pool->stepToNextEvent();
  });
  QAction* teaching = engine->addAction(tr("Teaching preset"));
  teaching->setObjectName(QStringLiteral("teachingPreset"));
  teaching->setCheckable(true);
  teaching->setChecked(m_session.settings().teachingPreset);
  teaching->setToolTip(tr("Blocks of %1 tokens in a pool of %2, chats of %3 tokens, %4 tokens per step: allocation, sharing, "
                          "copy-on-write and preemption become visible (reloads the model)")
                           .arg(AppSettings::kTeachingBlockSize)
                           .arg(AppSettings::kTeachingBlocks)
                           .arg(AppSettings::kTeachingContext)
                           .arg(AppSettings::kTeachingStepTokens));
  connect(teaching, &QAction::toggled, this, [this](bool on) {
    AppSettings s = m_session.settings();
    s.teachingPreset = on;
    s.teachingBlocks = AppSettings::kTeachingBlocks;  // the preset's own pool, not a lesson's
    s.teachingHostBlocks = 0;
    applySettings(s);
  });
  buildApiServer(engine);
}

void MainWindow::buildLessonsDock() {
  // Beside the chat list: the pool view stays in sight while a lesson runs.
  m_lessons = new LessonRunner(m_session, this);
  // What a lesson tells the window: the chat to show, the pool panel's scene.
  connect(m_lessons, &LessonRunner::chatShown, this, &MainWindow::selectChat);
  connect(m_lessons, &LessonRunner::sceneShown, this, [this](bool stepTimeline, bool contiguousStrip) {
    if (auto* panel = findChild<KvPoolPanel*>(QStringLiteral("kvPoolPanel"))) {
      panel->showStepTimeline(stepTimeline);
      panel->showContiguousStrip(contiguousStrip);
    }
  });
  auto* dock = new QDockWidget(tr("Lessons"), this);
  dock->setObjectName(QStringLiteral("lessonsDock"));
  dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetClosable);
  dock->setWidget(new LessonsPanel(*m_pool, *m_lessons, dock));
  addDockWidget(Qt::LeftDockWidgetArea, dock);
  if (auto* chats = findChild<QDockWidget*>(QStringLiteral("chatsDock"))) {
    tabifyDockWidget(chats, dock);
    chats->raise();
  }
}

void MainWindow::buildActions() {
  auto add = [this](const QString& text, const QList<QKeySequence>& keys, auto slot) {
    auto* a = new QAction(text, this);
    a->setShortcuts(keys);
    a->setShortcutContext(Qt::WindowShortcut);
    connect(a, &QAction::triggered, this, slot);
    addAction(a);
    return a;
  };
  // The chat's own actions (new, fork, regenerate, stop, ...) are in the Chat menu, with their keys.
  add(tr("Send"), {QKeySequence(Qt::CTRL | Qt::Key_Return), QKeySequence(Qt::CTRL | Qt::Key_Enter)}, &MainWindow::send);
  add(tr("Next chat"), {QKeySequence(Qt::CTRL | Qt::Key_Tab)}, &MainWindow::nextChat);
  // One sequence: X11 delivers Ctrl+Shift+Tab as Backtab, and Qt also matches it without the Shift,
  // so listing Ctrl+Shift+Tab and Ctrl+Backtab both made the press ambiguous and neither fired.
  add(tr("Previous chat"), {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Tab)}, &MainWindow::previousChat);
}

void MainWindow::connectBridge() {
  // The load's flow has ended with a new engine: the window is the user's again.
  connect(m_loader, &ModelLoader::modelInUse, this, [this](const QString& path) {
    setWindowTitle(tr("PagedChat — %1").arg(QFileInfo(path).completeBaseName()));
    m_central->setCurrentWidget(m_chatPanel);
    m_loader->setErrorBoxes(true);  // from now on a failed load leaves this model in use
    if (m_library) m_library->setModelInUse(path);
    m_input->setPlaceholderText(tr("Type a message; Ctrl+Enter sends"));
    updateControls();
    m_input->setFocus();
    emit modelReady();
  });
  connect(m_bridge, &EngineBridge::modelLoaded, this, [this](const QString& description) {
    // The rest happens when the load's flow ends (ModelLoader::modelInUse, above): one place,
    // after the loader stops blocking turns, whatever order the queued signals arrive in.
    m_status->setText(description);
    updateControls();  // the meter's context
  });
  // A load that did not end with a new engine, said in the status line (after the welcome
  // page's own handling of it: buildWelcome connects first).
  connect(m_loader, &ModelLoader::ended, this, [this](bool ok, const QString& message) {
    if (ok) return;
    if (message.isEmpty()) {
      m_status->setText(m_session.hasModel() ? tr("Loading cancelled; the model in use stays.") : tr("Loading cancelled; no model loaded."));
      if (!m_session.hasModel()) m_input->setPlaceholderText(tr("No model loaded: File > Open model…"));
      return;
    }
    m_status->setText(explainLoadError(message).sentence);
    if (!m_session.hasModel()) m_input->setPlaceholderText(tr("No model loaded"));
  });
}

// What the chat controller says, shown where it concerns the chat on screen.
void MainWindow::connectChats() {
  connect(m_chats, &ChatController::chatAdded, this, &MainWindow::addChatToList);
  connect(m_chats, &ChatController::titleChanged, m_list, &ChatListWidget::setTitle);
  connect(m_chats, &ChatController::replyingChanged, m_list, &ChatListWidget::setReplying);
  connect(m_chats, &ChatController::pinnedChanged, m_list, &ChatListWidget::setPinned);
  connect(m_chats, &ChatController::activityChanged, this, [this](ChatId id) {
    if (const ChatController::Chat* c = m_chats->chat(id)) m_list->setLastActive(id, c->record.lastActive);
  });
  connect(m_chats, &ChatController::chatRemoved, this, &MainWindow::onChatRemoved);
  connect(m_chats, &ChatController::engineChanged, this, [this](ChatId id, const RemoteEngineChoice& engine) {
    m_list->setRemoteHost(id, engine.isSet() ? QUrl(engine.url).authority() : QString());
    if (id == m_current) updateControls();
  });
  // A prompt set by someone other than its editors (a lesson): the editors show it.
  connect(m_chats, &ChatController::systemPromptChanged, this, [this](ChatId id) {
    const ChatController::Chat* c = m_chats->chat(id);
    if (id != m_current || !c) return;
    const QSignalBlocker quiet1(m_overridePrompt), quiet2(m_chatPromptEdit);
    if (m_overridePrompt->isChecked() != c->record.overridesSystemPrompt) m_overridePrompt->setChecked(c->record.overridesSystemPrompt);
    if (m_chatPromptEdit->toPlainText() != c->record.systemPrompt) m_chatPromptEdit->setPlainText(c->record.systemPrompt);
    m_chatPromptEdit->setEnabled(c->record.overridesSystemPrompt);
  });
  connect(m_chats, &ChatController::chatChanged, this, [this](ChatId id) {
    if (id != m_current) return;
    if (!m_renderTimer.isActive()) m_renderTimer.start();
    updateControls();
  });
  connect(m_chats, &ChatController::status, this, &MainWindow::setChatStatus);
  connect(m_chats, &ChatController::turnEnded, this, [this](ChatId id) {
    if (id == m_current) {
      m_renderTimer.stop();
      showCurrent();
      updateControls();
    }
    emit turnDone(id);
  });
}

const ChatRecord* MainWindow::chat(ChatId id) const {
  const ChatController::Chat* c = m_chats->chat(id);
  return c ? &c->record : nullptr;
}

QVector<ChatId> MainWindow::chatIds() const { return m_list->orderShown(); }

bool MainWindow::isReplying(ChatId id) const {
  const ChatController::Chat* c = m_chats->chat(id);
  return c && c->replying;
}

ReplyMetrics MainWindow::sampleMetrics(ChatId id, int sample) const {
  const ChatController::Chat* c = m_chats->chat(id);
  if (!c || sample < 0 || sample >= c->sampleMetrics.size()) return {};
  return c->sampleMetrics[sample];
}

int MainWindow::contextUsed(ChatId id) const {
  const ChatController::Chat* c = m_chats->chat(id);
  return c ? c->contextUsed : 0;
}

const ChatController::Chat* MainWindow::current() const { return m_chats->chat(m_current); }

void MainWindow::addChatToList(ChatId id) {
  const ChatRecord& r = m_chats->chat(id)->record;
  const ChatRecord* parent = chat(r.parentId);
  m_list->addChat(r, parent ? parent->title : tr("a deleted chat"));
  if (r.remote.isSet()) m_list->setRemoteHost(id, QUrl(r.remote.url).authority());
}

ChatId MainWindow::newChat() {
  const ChatId id = m_chats->create();
  selectChat(id);
  m_input->setFocus();
  return id;
}

void MainWindow::selectChat(ChatId id) {
  const ChatController::Chat* c = m_chats->chat(id);
  if (!c) return;
  if (id != m_current) {
    // The input is the chat's: what was typed (or being edited) in the other one waits there.
    if (m_chats->chat(m_current)) m_drafts[m_current] = {m_input->toPlainText(), m_editing};
    const Draft draft = m_drafts.take(id);
    m_input->setPlainText(draft.text);
    m_input->moveCursor(QTextCursor::End);
    const bool stillAQuestion = draft.editing >= 0 && draft.editing < c->record.messages.size() &&
                                c->record.messages[draft.editing].role == QLatin1String("user");
    m_editing = stillAQuestion ? draft.editing : -1;
    m_status->setText(m_chatStatus.value(id));
  }
  m_current = id;
  m_list->select(id);
  const ChatRecord& r = c->record;
  // Shown without counting as an edit.
  const QSignalBlocker b1(m_overridePrompt), b2(m_chatPromptEdit);
  m_overridePrompt->setChecked(r.overridesSystemPrompt);
  m_chatPromptEdit->setPlainText(r.systemPrompt);
  m_chatPromptEdit->setEnabled(r.overridesSystemPrompt);
  const QSignalBlocker b3(m_contextPolicy);
  m_contextPolicy->setCurrentIndex(m_contextPolicy->findData(static_cast<int>(r.contextPolicy)));
  showCurrent();
  updateControls();
}

void MainWindow::showCurrent() {
  const ChatController::Chat* c = current();
  if (!c) return;
  if (c->numSamples > 1 && (c->replying || c->awaitingPick)) {
    if (m_compare->numColumns() != c->numSamples || m_compare->titles() != c->columnTitles || m_stack->currentWidget() != m_compare)
      m_compare->start(c->numSamples, c->columnTitles);
    for (int i = 0; i < c->numSamples; ++i) {
      if (m_compare->text(i) != c->samples[i]) m_compare->setText(i, c->samples[i]);
      if (!c->sampleMetrics[i].isEmpty()) m_compare->setMetrics(i, c->sampleMetrics[i]);
    }
    m_compare->setPickable(c->awaitingPick);
    m_stack->setCurrentWidget(m_compare);
  } else {
    m_transcript->showChat(c->record, c->replying, c->contextFullTokens, c->contextLength, c->lastError);
    m_stack->setCurrentWidget(m_transcript);
  }
}

void MainWindow::updateControls() {
  const ChatController::Chat* c = current();
  const bool busy = c && (c->replying || c->awaitingPick);
  const bool hasReply = c && !c->record.messages.isEmpty() && c->record.messages.last().role == QLatin1String("assistant");
  // While a model loads, turns wait: the engine they would go to is about to be replaced.
  // A chat on a remote engine needs no local model.
  const bool ready = (c && c->record.remote.isSet()) || (m_session.hasModel() && !m_loader->isLoading());
  m_input->setEnabled(ready);
  m_send->setEnabled(ready && c && !busy);
  m_stop->setEnabled(c && c->replying);
  m_regenerate->setEnabled(ready && c && !busy && !c->record.messages.isEmpty());
  m_copy->setEnabled(hasReply);
  m_chatSampling->setEnabled(c != nullptr);
  const bool own = c && c->record.ownSampling;
  m_chatSampling->setText(own ? tr("Sampling: this chat's") : tr("Sampling"));
  m_chatSampling->setToolTip((own ? tr("This chat samples with its own settings: %1") : tr("This chat samples with the app's defaults: %1"))
                                 .arg(describeChatSampling(own ? *c->record.ownSampling : m_session.settings().sampling)) +
                             tr(" (click to change)"));
  m_actionRow->fit();
  // The conversation the model reads next against the context, and what the chat holds now.
  if (c && c->record.remote.isSet())
    m_context->setText(tr("remote: %1 at %2").arg(c->record.remote.model, c->record.remote.url));
  else
    m_context->setText(c && m_session.contextLength() > 0 ? tr("context %1 / %2 tokens · %3 KV blocks held")
                                                      .arg(c->conversationTokens)
                                                      .arg(m_session.contextLength())
                                                      .arg(c->blocksHeld)
                                                : QString());
  m_context->setToolTip(tr("Tokens of this chat as the model reads it next (system prompt and messages in view), against "
                           "the context; and the KV blocks its parked sequences hold in the pool now (0 after a restart "
                           "or a stop: the next turn reads the chat again, the prefix cache serving what it can)"));
}

void MainWindow::onSystemPromptEdited() {
  m_chats->setSharedSystemPrompt(m_sharedPromptEdit->toPlainText());
  m_chats->setChatSystemPrompt(m_current, m_overridePrompt->isChecked(), m_chatPromptEdit->toPlainText());
  m_chatPromptEdit->setEnabled(m_overridePrompt->isChecked());
  m_saveSystemPromptTimer.start();
}

// While a model loads, turns wait: the engine they would go to is about to be replaced.
bool MainWindow::canStartTurn() const {
  const ChatController::Chat* c = current();
  return c && !c->replying && (c->record.remote.isSet() || (m_session.hasModel() && !m_loader->isLoading()));
}

TurnSettings MainWindow::nextTurnSettings(QStringList& columnTitles) const {
  const int n = m_samples->value();
  TurnSettings settings = m_session.settings().sampling;
  settings.numSamples = n;
  settings.contextPolicy = m_session.settings().contextPolicy;  // the chat's own, when it has one, wins
  columnTitles.clear();
  if (n > 1 && m_beamSearch->isChecked()) {
    settings.beamSearch = true;
    for (int i = 0; i < n; ++i) columnTitles << (i == 0 ? tr("beam 1 (most likely)") : tr("beam %1").arg(i + 1));
  } else if (n > 1 && m_varySettings->isChecked()) {
    settings = m_session.settings().variedTurn(n);
    settings.contextPolicy = m_session.settings().contextPolicy;
    for (const TurnSettings& column : settings.columns) columnTitles << describeSampling(column);
  }
  return settings;
}

void MainWindow::send() {
  const QString text = m_input->toPlainText().trimmed();
  if (!canStartTurn() || text.isEmpty()) return;
  m_input->clear();
  QStringList titles;
  const TurnSettings settings = nextTurnSettings(titles);
  if (m_editing >= 0) m_chats->edit(m_current, std::exchange(m_editing, -1), text, settings, titles);
  else m_chats->send(m_current, text, settings, titles);
  showCurrent();
  updateControls();
}

void MainWindow::stop() {
  if (m_editing >= 0) {  // Esc while editing: the edit is dropped, the conversation as it was
    m_editing = -1;
    m_input->clear();
    setChatStatus(m_current, QString());
    return;
  }
  m_chats->stop(m_current);
}

void MainWindow::regenerate() {
  if (!canStartTurn()) return;
  QStringList titles;
  const TurnSettings settings = nextTurnSettings(titles);
  m_chats->regenerate(m_current, settings, titles);
  showCurrent();
  updateControls();
}

void MainWindow::copyLastReply() {
  const ChatController::Chat* c = current();
  if (c && !c->record.messages.isEmpty()) QApplication::clipboard()->setText(withoutThinking(c->record.messages.last().content));
}

ChatId MainWindow::forkChat(ChatId parentId, int messageCount) {
  QString draft;
  const ChatId id = m_chats->fork(parentId, messageCount, &draft);
  if (id < 0) return id;
  selectChat(id);
  if (!draft.isEmpty()) {
    // Ready to write: the question forked at, to edit and send as the new branch.
    m_input->setPlainText(draft);
    m_input->selectAll();
    m_input->setFocus();
  }
  return id;
}

void MainWindow::forkCurrentAtLatest() {
  if (const ChatController::Chat* c = current()) forkChat(c->record.id, static_cast<int>(c->record.messages.size()));
}

void MainWindow::pickSample(int sample) {
  if (!m_chats->pick(m_current, sample)) return;
  showCurrent();
  updateControls();
}

void MainWindow::nextChat() {
  const QVector<ChatId> ids = m_list->orderShown();
  if (ids.isEmpty()) return;
  selectChat(ids[(ids.indexOf(m_current) + 1) % ids.size()]);
}

void MainWindow::previousChat() {
  const QVector<ChatId> ids = m_list->orderShown();
  if (ids.isEmpty()) return;
  selectChat(ids[(ids.indexOf(m_current) + ids.size() - 1) % ids.size()]);
}

void MainWindow::setEnginePaused(bool paused) { m_pool->setPaused(paused); }

void MainWindow::stepEngine() { m_pool->step(); }
