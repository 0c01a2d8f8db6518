// The main window: layout, actions, and the flow of each chat's turns through the bridge.
#include "ui/main_window.h"

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QDockWidget>
#include <QFileInfo>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QStackedWidget>
#include <QStatusBar>
#include <QToolBar>
#include <QVBoxLayout>

#include <algorithm>

#include "ui/chat_list_widget.h"
#include "ui/compare_settings_dialog.h"
#include "ui/compare_view.h"
#include "ui/engine_bridge.h"
#include "ui/kv_pool_panel.h"
#include "ui/model_loader.h"
#ifdef PAGEDCHAT_HAVE_SERVER
#include "ui/local_api_server.h"
#endif
#include "ui/transcript_view.h"

namespace {
const QString kSharedSystemPromptKey = QStringLiteral("shared_system_prompt");
}  // namespace

// Runs f(bridge) on the engine thread; the UI thread never waits for it.
template <class F>
void MainWindow::onEngine(F f) {
  QMetaObject::invokeMethod(m_bridge, [b = m_bridge, f = std::move(f)] { f(*b); }, Qt::QueuedConnection);
}

MainWindow::MainWindow(const QString& databasePath, QWidget* parent)
    : QMainWindow(parent), m_db(std::make_unique<ChatDatabase>(databasePath)) {
  setWindowTitle(tr("PagedChat"));
  resize(1280, 780);
  m_bridge = new EngineBridge();
  m_bridge->moveToThread(&m_engineThread);
  connect(&m_engineThread, &QThread::finished, m_bridge, &QObject::deleteLater);
  m_engineThread.start();
  m_settings = AppSettings::load(*m_db);
  m_loader = new ModelLoader(m_bridge, *m_db, this);

  auto* chats = new QDockWidget(tr("Chats"), this);
  chats->setObjectName(QStringLiteral("chatsDock"));
  chats->setFeatures(QDockWidget::DockWidgetMovable);
  chats->setWidget(buildLeftPanel());
  addDockWidget(Qt::LeftDockWidgetArea, chats);
  setCentralWidget(buildChatPanel());
  buildFileMenu();
  buildKvDock();
  buildActions();
  m_status = new QLabel(tr("No model"), this);
  m_status->setObjectName(QStringLiteral("status"));
  m_status->setWordWrap(true);
  m_context = new QLabel(this);
  m_context->setObjectName(QStringLiteral("contextUsed"));
  statusBar()->addWidget(m_status, 1);
  statusBar()->addPermanentWidget(m_context);
  statusBar()->addPermanentWidget(m_loader->progressWidget());
  connect(m_loader, &ModelLoader::loadingChanged, this, &MainWindow::updateControls);
  if (!m_db->isOpen()) m_status->setText(tr("Chats will not be saved: %1").arg(m_db->lastError()));

  m_renderTimer.setSingleShot(true);
  m_renderTimer.setInterval(33);
  connect(&m_renderTimer, &QTimer::timeout, this, &MainWindow::showCurrent);
  m_saveSystemPromptTimer.setSingleShot(true);
  m_saveSystemPromptTimer.setInterval(400);
  connect(&m_saveSystemPromptTimer, &QTimer::timeout, this, [this] {
    m_db->setSetting(kSharedSystemPromptKey, m_sharedSystemPrompt);
    if (ChatUi* c = current()) save(*c);
  });
  connectBridge();

  // Restore: parents have smaller ids than their forks, so each parent is listed first.
  m_sharedSystemPrompt = m_db->setting(kSharedSystemPromptKey);
  m_sharedPromptEdit->setPlainText(m_sharedSystemPrompt);
  for (ChatRecord& r : m_db->loadChats()) {
    const ChatId id = r.id;
    m_chats[id].record = std::move(r);
    addChatToList(m_chats[id]);
  }
  if (m_chats.empty()) newChat();
  else selectChat(m_chats.begin()->first);
  updateControls();
  restoreApiServer();
}

MainWindow::~MainWindow() {
#ifdef PAGEDCHAT_HAVE_SERVER
  delete m_api;  // the server's requests go before the engine does
  m_api = nullptr;
#endif
  m_engineThread.quit();
  m_engineThread.wait();
}

QWidget* MainWindow::buildLeftPanel() {
  auto* panel = new QWidget(this);
  auto* v = new QVBoxLayout(panel);
  auto* newButton = new QPushButton(tr("New chat"), panel);
  newButton->setObjectName(QStringLiteral("newChat"));
  connect(newButton, &QPushButton::clicked, this, &MainWindow::newChat);
  v->addWidget(newButton);
  m_list = new ChatListWidget(panel);
  connect(m_list, &ChatListWidget::chatSelected, this, &MainWindow::selectChat);
  v->addWidget(m_list, 2);

  auto* prompts = new QGroupBox(tr("System prompt"), panel);
  auto* pv = new QVBoxLayout(prompts);
  pv->addWidget(new QLabel(tr("Shared by all chats (empty: the model's default):"), prompts));
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
  v->addWidget(prompts, 1);
  connect(m_sharedPromptEdit, &QPlainTextEdit::textChanged, this, &MainWindow::onSystemPromptEdited);
  connect(m_chatPromptEdit, &QPlainTextEdit::textChanged, this, &MainWindow::onSystemPromptEdited);
  connect(m_overridePrompt, &QCheckBox::toggled, this, &MainWindow::onSystemPromptEdited);
  return panel;
}

QWidget* MainWindow::buildChatPanel() {
  auto* panel = new QWidget(this);
  auto* v = new QVBoxLayout(panel);
  m_stack = new QStackedWidget(panel);
  m_transcript = new TranscriptView(m_stack);
  m_compare = new CompareView(m_stack);
  m_stack->addWidget(m_transcript);
  m_stack->addWidget(m_compare);
  v->addWidget(m_stack, 1);
  connect(m_transcript, &TranscriptView::forkRequested, this, [this](int k) { forkChat(m_current, k); });
  connect(m_transcript, &TranscriptView::copyRequested, this, [this](int i) {
    if (ChatUi* c = current(); c && i >= 0 && i < c->record.messages.size())
      QApplication::clipboard()->setText(c->record.messages[i].content);
  });
  connect(m_compare, &CompareView::picked, this, &MainWindow::pickSample);

  m_input = new QPlainTextEdit(panel);
  m_input->setObjectName(QStringLiteral("input"));
  m_input->setPlaceholderText(tr("Loading the model…"));
  m_input->setMaximumHeight(90);
  v->addWidget(m_input);
  auto* row = new QHBoxLayout();
  row->addWidget(new QLabel(tr("Samples:"), panel));
  m_samples = new QSpinBox(panel);
  m_samples->setObjectName(QStringLiteral("samples"));
  m_samples->setRange(1, 4);
  m_samples->setToolTip(tr("More than 1: compare that many replies side by side (the prompt is computed once)"));
  row->addWidget(m_samples);
  m_varySettings = new QCheckBox(tr("Vary settings"), panel);
  m_varySettings->setObjectName(QStringLiteral("varySettings"));
  m_varySettings->setToolTip(tr("Each compare column samples with its own settings (Columns…); the prompt is still computed once"));
  row->addWidget(m_varySettings);
  auto* columns = new QPushButton(tr("Columns…"), panel);
  columns->setObjectName(QStringLiteral("editCompareColumns"));
  connect(columns, &QPushButton::clicked, this, &MainWindow::showCompareColumns);
  row->addWidget(columns);
  row->addStretch(1);
  auto button = [&](const QString& text, const char* name) {
    auto* b = new QPushButton(text, panel);
    b->setObjectName(QString::fromLatin1(name));
    row->addWidget(b);
    return b;
  };
  m_copy = button(tr("Copy"), "copy");
  m_regenerate = button(tr("Regenerate"), "regenerate");
  m_stop = button(tr("Stop"), "stop");
  m_send = button(tr("Send"), "send");
  connect(m_copy, &QPushButton::clicked, this, &MainWindow::copyLastReply);
  connect(m_regenerate, &QPushButton::clicked, this, &MainWindow::regenerate);
  connect(m_stop, &QPushButton::clicked, this, &MainWindow::stop);
  connect(m_send, &QPushButton::clicked, this, &MainWindow::send);
  v->addLayout(row);
  return panel;
}

void MainWindow::buildKvDock() {
  // The KV block-pool view (ui/kv_pool_panel.h) draws every frame the bridge emits.
  auto* dock = new QDockWidget(tr("KV blocks"), this);
  dock->setObjectName(QStringLiteral("kvBlocksDock"));
  auto* pool = new KvPoolPanel(dock);
  pool->setObjectName(QStringLiteral("kvPoolPanel"));
  pool->setMinimumWidth(280);
  dock->setWidget(pool);
  addDockWidget(Qt::RightDockWidgetArea, dock);
  connect(this, &MainWindow::poolFrame, pool, &KvPoolPanel::setFrame);

  auto* engine = addToolBar(tr("Engine"));
  engine->setObjectName(QStringLiteral("engineToolBar"));
  QAction* pause = engine->addAction(tr("Pause engine"));
  pause->setObjectName(QStringLiteral("pauseEngine"));
  pause->setCheckable(true);
  connect(pause, &QAction::toggled, this, &MainWindow::setEnginePaused);
  QAction* step = engine->addAction(tr("Step"));
  step->setObjectName(QStringLiteral("stepEngine"));
  step->setToolTip(tr("Run one engine step (while paused)"));
  connect(step, &QAction::triggered, this, &MainWindow::stepEngine);
  QAction* teaching = engine->addAction(tr("Teaching preset"));
  teaching->setObjectName(QStringLiteral("teachingPreset"));
  teaching->setCheckable(true);
  teaching->setChecked(m_settings.teachingPreset);
  teaching->setToolTip(tr("Blocks of %1 tokens in a pool of %2, chats of %3 tokens, %4 tokens per step: allocation, sharing, "
                          "copy-on-write and preemption become visible (reloads the model)")
                           .arg(AppSettings::kTeachingBlockSize)
                           .arg(AppSettings::kTeachingBlocks)
                           .arg(AppSettings::kTeachingContext)
                           .arg(AppSettings::kTeachingStepTokens));
  connect(teaching, &QAction::toggled, this, [this](bool on) {
    AppSettings s = m_settings;
    s.teachingPreset = on;
    applySettings(s);
  });
  buildApiServer(engine);
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
  add(tr("New chat"), {QKeySequence(Qt::CTRL | Qt::Key_N)}, &MainWindow::newChat);
  add(tr("Send"), {QKeySequence(Qt::CTRL | Qt::Key_Return), QKeySequence(Qt::CTRL | Qt::Key_Enter)}, &MainWindow::send);
  add(tr("Stop"), {QKeySequence(Qt::Key_Escape)}, &MainWindow::stop);
  add(tr("Fork"), {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_F)}, &MainWindow::forkCurrentAtLatest);
  add(tr("Next chat"), {QKeySequence(Qt::CTRL | Qt::Key_Tab)}, &MainWindow::nextChat);
  add(tr("Previous chat"), {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Tab), QKeySequence(Qt::CTRL | Qt::Key_Backtab)},
      &MainWindow::previousChat);
}

void MainWindow::connectBridge() {
  // The load's flow has ended with a new engine: the window is the user's again.
  connect(m_loader, &ModelLoader::modelInUse, this, [this](const QString& path) {
    setWindowTitle(tr("PagedChat — %1").arg(QFileInfo(path).completeBaseName()));
    m_modelReady = true;
    m_input->setPlaceholderText(tr("Type a message; Ctrl+Enter sends"));
    // A new engine holds nothing: replies in flight on the old one ended with it, and each
    // chat's next turn reads its messages afresh.
    for (auto& [id, c] : m_chats) {
      if (c.replying) {
        c.replying = false;
        m_list->setReplying(id, false);
        save(c);
      }
      c.awaitingPick = false;
      c.contextUsed = 0;
      onEngine([id = id, t = c.record.title](EngineBridge& b) { b.setChatTitle(id, t); });
    }
    updateControls();
    m_input->setFocus();
    emit modelReady();
  });
  connect(m_bridge, &EngineBridge::poolFrame, this, &MainWindow::poolFrame);
  connect(m_bridge, &EngineBridge::poolFrame, this, [this](const PoolFrame& f) {
    if (!f.lastStepSummary.isEmpty()) m_status->setText(f.lastStepSummary);
  });
  connect(m_bridge, &EngineBridge::modelLoaded, this, [this](const QString& description, int contextLength) {
    // The rest happens when the load's flow ends (ModelLoader::modelInUse, below): one place,
    // after the loader stops blocking turns, whatever order the queued signals arrive in.
    m_contextLength = contextLength;
    m_status->setText(description);
  });
  connect(m_bridge, &EngineBridge::modelLoadCancelled, this, [this] {
    m_status->setText(m_modelReady ? tr("Loading cancelled; the model in use stays.") : tr("Loading cancelled; no model loaded."));
    if (!m_modelReady) m_input->setPlaceholderText(tr("No model loaded: File > Open model…"));
  });
  connect(m_bridge, &EngineBridge::modelFailed, this, [this](const QString& e) {
    m_status->setText(tr("Could not load the model: %1").arg(e));
    if (!m_modelReady) m_input->setPlaceholderText(tr("No model loaded"));
  });
  connect(m_bridge, &EngineBridge::replyText, this, [this](ChatId id, int sample, const QString& text) {
    auto it = m_chats.find(id);
    if (it == m_chats.end() || !it->second.replying) return;
    ChatUi& c = it->second;
    if (c.numSamples == 1) c.record.messages.last().content += text;
    else if (sample < c.samples.size()) c.samples[sample] += text;
    if (id == m_current && !m_renderTimer.isActive()) m_renderTimer.start();
  });
  connect(m_bridge, &EngineBridge::replyFinished, this, [this](ChatId id, int sample, const ReplyMetrics& m) {
    auto it = m_chats.find(id);
    if (it == m_chats.end() || !it->second.replying) return;
    ChatUi& c = it->second;
    if (c.numSamples == 1) c.record.messages.last().metrics = m;
    else if (sample < c.sampleMetrics.size()) c.sampleMetrics[sample] = m;
    if (id == m_current) m_status->setText(m.summary());
  });
  connect(m_bridge, &EngineBridge::replyFailed, this, [this](ChatId id, const QString& e) {
    m_status->setText(tr("Error: %1").arg(e));
    auto it = m_chats.find(id);
    // A reply that never started leaves no empty message behind.
    if (it != m_chats.end() && it->second.replying && it->second.numSamples == 1 &&
        it->second.record.messages.last().content.isEmpty())
      it->second.record.messages.removeLast();
  });
  connect(m_bridge, &EngineBridge::turnDone, this, [this](ChatId id, int contextUsed) {
    auto it = m_chats.find(id);
    if (it == m_chats.end() || !it->second.replying) return;
    ChatUi& c = it->second;
    c.replying = false;
    c.contextUsed = contextUsed;
    m_list->setReplying(id, false);
    if (c.numSamples > 1) c.awaitingPick = true;
    else save(c);
    if (id == m_current) {
      m_renderTimer.stop();
      showCurrent();
      updateControls();
    }
    emit turnDone(id);
  });
  connect(m_bridge, &EngineBridge::forkDone, this, [this](ChatId child, bool shares) {
    auto it = m_chats.find(child);
    if (it == m_chats.end()) return;
    if (child == m_current)
      m_status->setText(shares ? tr("Forked: the new chat shares the parent's KV blocks (copy-on-write, nothing recomputed)")
                               : tr("Forked: the new chat's first turn reads its messages again (the prefix cache serves "
                                    "the full blocks the parent still holds)"));
    if (!shares) it->second.contextUsed = 0;
    updateControls();
  });
}

const ChatRecord* MainWindow::chat(ChatId id) const {
  auto it = m_chats.find(id);
  return it == m_chats.end() ? nullptr : &it->second.record;
}

QVector<ChatId> MainWindow::chatIds() const { return m_list->orderShown(); }

bool MainWindow::isReplying(ChatId id) const {
  auto it = m_chats.find(id);
  return it != m_chats.end() && it->second.replying;
}

ReplyMetrics MainWindow::sampleMetrics(ChatId id, int sample) const {
  auto it = m_chats.find(id);
  if (it == m_chats.end() || sample < 0 || sample >= it->second.sampleMetrics.size()) return {};
  return it->second.sampleMetrics[sample];
}

int MainWindow::contextUsed(ChatId id) const {
  auto it = m_chats.find(id);
  return it == m_chats.end() ? 0 : it->second.contextUsed;
}

MainWindow::ChatUi* MainWindow::current() {
  auto it = m_chats.find(m_current);
  return it == m_chats.end() ? nullptr : &it->second;
}

void MainWindow::addChatToList(const ChatUi& c) {
  const ChatRecord* parent = chat(c.record.parentId);
  m_list->addChat(c.record, parent ? parent->title : tr("a deleted chat"));
  if (m_modelReady) onEngine([id = c.record.id, t = c.record.title](EngineBridge& b) { b.setChatTitle(id, t); });
}

ChatId MainWindow::newChat() {
  const ChatId id = m_chats.empty() ? 1 : m_chats.rbegin()->first + 1;
  ChatUi c;
  c.record.id = id;
  c.record.title = tr("New chat %1").arg(id);
  m_chats[id] = c;
  addChatToList(m_chats[id]);
  save(m_chats[id]);
  selectChat(id);
  m_input->setFocus();
  return id;
}

void MainWindow::selectChat(ChatId id) {
  if (!m_chats.count(id)) return;
  m_current = id;
  m_list->select(id);
  const ChatRecord& r = m_chats[id].record;
  // Shown without counting as an edit.
  const QSignalBlocker b1(m_overridePrompt), b2(m_chatPromptEdit);
  m_overridePrompt->setChecked(r.overridesSystemPrompt);
  m_chatPromptEdit->setPlainText(r.systemPrompt);
  m_chatPromptEdit->setEnabled(r.overridesSystemPrompt);
  showCurrent();
  updateControls();
}

void MainWindow::showCurrent() {
  ChatUi* c = current();
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
    m_transcript->showChat(c->record, c->replying);
    m_stack->setCurrentWidget(m_transcript);
  }
}

void MainWindow::updateControls() {
  ChatUi* c = current();
  const bool busy = c && (c->replying || c->awaitingPick);
  const bool hasReply = c && !c->record.messages.isEmpty() && c->record.messages.last().role == QLatin1String("assistant");
  // While a model loads, turns wait: the engine they would go to is about to be replaced.
  const bool ready = m_modelReady && !m_loader->isLoading();
  m_input->setEnabled(ready);
  m_send->setEnabled(ready && c && !busy);
  m_stop->setEnabled(c && c->replying);
  m_regenerate->setEnabled(ready && c && !busy && !c->record.messages.isEmpty());
  m_copy->setEnabled(hasReply);
  m_context->setText(c && m_contextLength > 0 ? tr("context %1 / %2 tokens").arg(c->contextUsed).arg(m_contextLength)
                                              : QString());
}

void MainWindow::save(const ChatUi& c) {
  if (!m_db->saveChat(c.record)) m_status->setText(tr("Could not save the chat: %1").arg(m_db->lastError()));
}

void MainWindow::onSystemPromptEdited() {
  m_sharedSystemPrompt = m_sharedPromptEdit->toPlainText();
  if (ChatUi* c = current()) {
    c->record.overridesSystemPrompt = m_overridePrompt->isChecked();
    c->record.systemPrompt = m_chatPromptEdit->toPlainText();
    m_chatPromptEdit->setEnabled(c->record.overridesSystemPrompt);
  }
  m_saveSystemPromptTimer.start();
}

void MainWindow::send() {
  ChatUi* c = current();
  const QString text = m_input->toPlainText().trimmed();
  if (!c || text.isEmpty() || !m_modelReady || m_loader->isLoading() || c->replying) return;
  if (c->awaitingPick) pickSample(0);  // an unpicked compare continues with its first column
  m_input->clear();
  if (c->record.messages.isEmpty() && c->record.title.startsWith(tr("New chat"))) {
    c->record.title = text.left(40).replace(QLatin1Char('\n'), QLatin1Char(' '));
    m_list->setTitle(c->record.id, c->record.title);
    onEngine([id = c->record.id, t = c->record.title](EngineBridge& b) { b.setChatTitle(id, t); });
  }
  c->record.messages.append({QStringLiteral("user"), text, {}});
  submitTurn(*c);
}

void MainWindow::submitTurn(ChatUi& c) {
  const int n = m_samples->value();
  TurnSettings settings = m_settings.sampling;
  settings.numSamples = n;
  c.columnTitles.clear();
  if (n > 1 && m_varySettings->isChecked()) {
    settings = m_settings.variedTurn(n);
    for (const TurnSettings& column : settings.columns) c.columnTitles << describeSampling(column);
  }
  const ChatMessages messages = c.record.engineMessages(m_sharedSystemPrompt);
  c.numSamples = settings.numSamples;
  c.replying = true;
  c.awaitingPick = false;
  c.samples = QVector<QString>(settings.numSamples);
  c.sampleMetrics = QVector<ReplyMetrics>(settings.numSamples);
  if (settings.numSamples == 1) c.record.messages.append({QStringLiteral("assistant"), QString(), {}});
  save(c);
  m_list->setReplying(c.record.id, true);
  onEngine([id = c.record.id, messages, settings](EngineBridge& b) { b.submit(id, messages, settings); });
  showCurrent();
  updateControls();
}

void MainWindow::stop() {
  if (ChatUi* c = current(); c && c->replying) onEngine([id = c->record.id](EngineBridge& b) { b.stop(id); });
}

void MainWindow::regenerate() {
  ChatUi* c = current();
  if (!c || c->replying || !m_modelReady || m_loader->isLoading()) return;
  if (c->awaitingPick) {
    c->awaitingPick = false;
    onEngine([id = c->record.id](EngineBridge& b) { b.pickSample(id, 0); });
  }
  if (!c->record.messages.isEmpty() && c->record.messages.last().role == QLatin1String("assistant"))
    c->record.messages.removeLast();
  if (c->record.messages.isEmpty()) return;
  submitTurn(*c);
}

void MainWindow::copyLastReply() {
  ChatUi* c = current();
  if (c && !c->record.messages.isEmpty()) QApplication::clipboard()->setText(c->record.messages.last().content);
}

ChatId MainWindow::forkChat(ChatId parentId, int messageCount) {
  auto it = m_chats.find(parentId);
  if (it == m_chats.end()) return -1;
  ChatUi& parent = it->second;
  messageCount = std::clamp<int>(messageCount, 0, static_cast<int>(parent.record.messages.size()));
  const ChatId id = m_chats.rbegin()->first + 1;
  ChatUi child;
  child.record.id = id;
  child.record.title = tr("%1 (fork)").arg(parent.record.title);
  child.record.parentId = parentId;
  child.record.forkedAtMessage = messageCount;
  child.record.overridesSystemPrompt = parent.record.overridesSystemPrompt;
  child.record.systemPrompt = parent.record.systemPrompt;
  child.record.messages = parent.record.messages.mid(0, messageCount);
  // At the latest message of a finished reply the parent's parked sequence is forked
  // (copy-on-write, nothing recomputed). At an earlier message the child holds nothing yet:
  // its first turn submits the shorter chat and the prefix cache serves the full blocks it
  // shares with the parent (the partial last block and what follows are computed).
  const bool atLatest = !parent.replying && !parent.awaitingPick && messageCount == parent.record.messages.size() &&
                        messageCount > 0 && parent.record.messages.last().role == QLatin1String("assistant");
  child.contextUsed = atLatest ? parent.contextUsed : 0;
  m_chats[id] = std::move(child);
  addChatToList(m_chats[id]);
  save(m_chats[id]);
  if (atLatest) onEngine([parentId, id](EngineBridge& b) { b.fork(parentId, id); });
  selectChat(id);
  return id;
}

void MainWindow::forkCurrentAtLatest() {
  if (ChatUi* c = current()) forkChat(c->record.id, static_cast<int>(c->record.messages.size()));
}

void MainWindow::pickSample(int sample) {
  ChatUi* c = current();
  if (!c || !c->awaitingPick || sample < 0 || sample >= c->samples.size()) return;
  c->awaitingPick = false;
  c->record.messages.append({QStringLiteral("assistant"), c->samples[sample], c->sampleMetrics[sample]});
  c->numSamples = 1;
  onEngine([id = c->record.id, sample](EngineBridge& b) { b.pickSample(id, sample); });
  save(*c);
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

void MainWindow::setEnginePaused(bool paused) {
  onEngine([paused](EngineBridge& b) { b.setPaused(paused); });
}

void MainWindow::stepEngine() {
  onEngine([](EngineBridge& b) { b.stepOnce(); });
}
