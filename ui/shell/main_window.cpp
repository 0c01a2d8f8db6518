// The main window: layout, actions, and the flow of each chat's turns through the bridge.
#include "ui/shell/main_window.h"

#include <QAction>
#include <QDockWidget>
#include <QFileInfo>
#include <QGuiApplication>
#include <QLabel>
#include <QMenu>
#include <QScreen>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>

#include "appcore/bridge/engine_bridge.h"
#include "appcore/chat/chat_database.h"
#include "appcore/chat/plain_error.h"
#include "appcore/lessons/lesson_runner.h"
#include "appcore/session/app_services.h"
#include "appcore/session/pool_control.h"
#include "ui/chat/chat_panel.h"
#include "ui/chat/system_prompt_box.h"
#include "ui/chat_list/chat_list_panel.h"
#include "ui/lessons/lessons_panel.h"
#include "ui/lessons/quantization_chart.h"
#include "ui/library/model_library_dialog.h"
#include "ui/pool_panel/engine_tool_bar.h"
#include "ui/pool_panel/kv_dock.h"
#include "ui/pool_panel/kv_pool_panel.h"
#include "ui/remote/remote_menus.h"
#include "ui/shell/api_server_switch.h"
#include "ui/shell/model_loader.h"
#include "ui/shell/status_line.h"

MainWindow::MainWindow(AppServices& services, QWidget* parent)
    : QMainWindow(parent),
      m_session(services.session()),
      m_db(&services.database()),
      m_bridge(services.bridge()),
      m_chats(&m_session.chats()),
      m_remoteEndpoints(&m_session.remoteEndpoints()),
      m_pool(&m_session.pool()),
      m_apiServer(services.apiServer()) {
  setWindowTitle(tr("PagedChat"));
  // 1280x780, or what the screen has room for (a small laptop's 1024x700 would cut it off).
  const QRect room = screen() ? screen()->availableGeometry() : QRect(0, 0, 1280, 780);
  resize(std::min(1280, room.width()), std::min(780, room.height()));
  applySavedTheme();  // before the widgets are made
  m_loader = new ModelLoader(m_session.modelLoad(), this);
  auto* chats = new QDockWidget(tr("Chats"), this);
  chats->setObjectName(QStringLiteral("chatsDock"));
  chats->setFeatures(QDockWidget::DockWidgetMovable);
  chats->setWidget(buildLeftPanel());
  addDockWidget(Qt::LeftDockWidgetArea, chats);
  buildChatPanel();
  m_remoteMenus = new RemoteMenus(m_session, [this] { return currentChat(); }, this);
  buildFileMenu();
  buildChatMenu();
  buildWelcome();
  buildKvDock();
  buildLessonsDock();
  buildActions();
  buildViewMenu();
  buildPresentMode();
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

  connectBridge();
  connectChats();

  QVector<ChatId> restored = m_chats->restore();
  m_lessons->removeLeftoverScene();
  restored.removeIf([this](ChatId id) { return !m_chats->chat(id); });
  m_chatPanel->restoreDrafts();
  if (restored.isEmpty()) newChat();
  else selectChat(chatAtStart(restored));
  updateControls();
  m_api->restore();
}

MainWindow::~MainWindow() = default;

namespace {
const QString kGeometryKey = QStringLiteral("window/geometry");
const QString kStateKey = QStringLiteral("window/state");
constexpr int kFramedAfterMs = 300;  // the window manager has framed a new window by then
}  // namespace

void MainWindow::showEvent(QShowEvent* event) {
  QMainWindow::showEvent(event);
  if (std::exchange(m_shownOnce, true)) return;
  // A damaged chat database was set aside at start: said once, where the user looks first.
  if (const DatabaseCheck& check = m_db->startupCheck(); check.damaged)
    QTimer::singleShot(0, this, [this, sentence = check.sentence(), keptAs = check.keptAs] {
      showError(QStringLiteral("damagedDatabase"), sentence, keptAs);
    });
  const QByteArray geometry = QByteArray::fromBase64(m_db->setting(kGeometryKey).toLatin1());
  const QByteArray state = QByteArray::fromBase64(m_db->setting(kStateKey).toLatin1());
  // Once the window manager has framed it: the whole frame on the screen, its status bar too.
  // (The offscreen platform's screen is a stand-in of 800x800: a window there is the size it
  // was asked to be.)
  if (QGuiApplication::platformName() != QLatin1String("offscreen")) QTimer::singleShot(kFramedAfterMs, this, &MainWindow::fitOnScreen);
  if (!geometry.isEmpty() && restoreGeometry(geometry) && restoreState(state)) return;
  // The chat list a fifth of the window, the pool view a quarter: at 1024 px the chat keeps
  // about half, at 1600 px nearly 60 %.
  auto* chats = findChild<QDockWidget*>(QStringLiteral("chatsDock"));
  const int w = width();
  resizeDocks({chats, m_kvDock}, {std::clamp(w / 5, 200, 320), std::clamp(w / 4, 280, 460)}, Qt::Horizontal);
}

// A window as tall as the screen plus its title bar (a size saved on another screen, or the
// first start's on a 768 px one) had its status bar below the screen's edge.
void MainWindow::fitOnScreen() {
  if (!screen() || isMaximized() || isFullScreen()) return;
  const QRect room = screen()->availableGeometry();
  const QRect frame = frameGeometry(), inner = geometry();
  const QMargins margins(inner.left() - frame.left(), inner.top() - frame.top(), frame.right() - inner.right(),
                         frame.bottom() - inner.bottom());
  const QSize fits = size().boundedTo(room.size().shrunkBy(margins)).expandedTo(minimumSizeHint());
  if (fits != size()) resize(fits);
  const QRect framed = frameGeometry();
  const QPoint at(std::clamp(framed.left(), room.left(), std::max(room.left(), room.right() + 1 - framed.width())),
                  std::clamp(framed.top(), room.top(), std::max(room.top(), room.bottom() + 1 - framed.height())));
  if (at != framed.topLeft()) move(at);
}

void MainWindow::closeEvent(QCloseEvent* event) {
  m_chatPanel->saveDrafts();
  // The layout saved is the user's own, not the presenting one.
  const QByteArray state = m_presenting ? m_stateBeforePresenting : saveState();
  m_db->setSetting(kGeometryKey, QString::fromLatin1(saveGeometry().toBase64()));
  m_db->setSetting(kStateKey, QString::fromLatin1(state.toBase64()));
  QMainWindow::closeEvent(event);
}

QWidget* MainWindow::buildLeftPanel() {
  auto* panel = new QWidget(this);
  auto* v = new QVBoxLayout(panel);
  m_chatList = new ChatListPanel(*m_chats, *m_db, panel);
  connect(m_chatList, &ChatListPanel::newChatRequested, this, &MainWindow::newChat);
  connect(m_chatList, &ChatListPanel::chatSelected, this, [this](ChatId id) {
    // Back to a chat of one's own: a lesson that is up ends there (not while it sets its scene
    // up: the last scene's chats going select the list's next one). After the list's own
    // signal has returned: leaving deletes the scene's rows, not to be done under its feet.
    if (m_lessons->isActive() && m_lessons->state() != LessonRunner::State::preparing && !m_lessons->sceneChatTitle(id)) {
      QMetaObject::invokeMethod(this, [this, id] {
        m_lessons->leave();
        selectChat(id);
      }, Qt::QueuedConnection);
      return;
    }
    selectChat(id);
  });
  connect(m_chatList, &ChatListPanel::searchResultOpened, this, &MainWindow::openSearchResult);
  connect(m_chatList, &ChatListPanel::chatRemoved, this, &MainWindow::onChatRemoved);
  connect(m_chatList, &ChatListPanel::contextMenuRequested, this, [this](const QPoint& at) { m_chatMenu->popup(at); });
  v->addWidget(m_chatList, 1);  // the list takes what the prompt box leaves
  m_prompts = new SystemPromptBox(*m_chats, panel);
  v->addWidget(m_prompts, 0);
  return panel;
}

// The chat shown, in the middle; the welcome page takes its place while no model is in use.
void MainWindow::buildChatPanel() {
  m_chatPanel = new ChatPanel(m_session, this);
  connect(m_chatPanel, &ChatPanel::forkRequested, this, &MainWindow::forkChat);
  connect(m_chatPanel, &ChatPanel::chatWanted, this, &MainWindow::selectChat);
  connect(m_chatPanel, &ChatPanel::statusSaid, this, &MainWindow::setChatStatus);
  connect(m_chatPanel, &ChatPanel::compareColumnsRequested, this, &MainWindow::showCompareColumns);
  connect(m_chatPanel, &ChatPanel::chatSamplingRequested, this, &MainWindow::showChatSampling);
  connect(m_chatPanel, &ChatPanel::toolServersRequested, this, &MainWindow::showToolServers);
  m_central = new QStackedWidget(this);
  m_central->addWidget(m_chatPanel);
  setCentralWidget(m_central);
}

void MainWindow::buildKvDock() {
  m_kvDock = new KvDock(m_session, this);
  addDockWidget(Qt::RightDockWidgetArea, m_kvDock);
  connect(m_pool, &PoolControl::note, this, [this](const QString& sentence) { m_status->setText(sentence); });
  connect(m_kvDock->engineToolBar(), &EngineToolBar::settingsWanted, this, &MainWindow::applySettings);
  m_api = new ApiServerSwitch(m_apiServer, *m_db, statusBar(), this);
  connect(m_api, &ApiServerSwitch::changed, this, [this](const QString&, const QString& error) {
    if (!error.isEmpty()) m_status->setText(tr("The API server did not start: %1").arg(error));
  });
}

void MainWindow::buildLessonsDock() {
  // Beside the chat list: the pool view stays in sight while a lesson runs.
  m_lessons = new LessonRunner(m_session, this);
  // What a lesson tells the window: the chat to show, the pool panel's scene.
  connect(m_lessons, &LessonRunner::chatShown, this, &MainWindow::selectChat);
  connect(m_lessons, &LessonRunner::sceneShown, this, [this](int historyTab, bool contiguousStrip) {
    m_kvDock->panel()->showHistoryTab(historyTab);
    m_kvDock->panel()->showContiguousStrip(contiguousStrip);
  });
  connect(m_lessons, &LessonRunner::quantizationShownChanged, m_kvDock->panel()->quantizationChart(),
          &QuantizationChart::setStudy);
  m_kvDock->engineToolBar()->setLessonSteps([this](EngineToolBar::Press press, int steps) {
    if (!m_lessons->isActive()) return false;
    if (press == EngineToolBar::Press::nextEvent) m_lessons->nextEvent();
    else m_lessons->step(steps);
    return true;
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
  add(tr("Send"), {QKeySequence(Qt::CTRL | Qt::Key_Return), QKeySequence(Qt::CTRL | Qt::Key_Enter)}, [this] { m_chatPanel->send(); });
  add(tr("Next chat"), {QKeySequence(Qt::CTRL | Qt::Key_Tab)}, [this] { nextChat(1); });
  // One sequence: X11 delivers Ctrl+Shift+Tab as Backtab, and Qt also matches it without the Shift,
  // so listing Ctrl+Shift+Tab and Ctrl+Backtab both made the press ambiguous and neither fired.
  add(tr("Previous chat"), {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Tab)}, [this] { nextChat(-1); });
}

void MainWindow::connectBridge() {
  // The load's flow has ended with a new engine: the window is the user's again.
  connect(m_loader, &ModelLoader::modelInUse, this, [this](const QString& path) {
    setWindowTitle(tr("PagedChat — %1").arg(QFileInfo(path).completeBaseName()));
    m_central->setCurrentWidget(m_chatPanel);
    m_loader->setErrorBoxes(true);  // from now on a failed load leaves this model in use
    if (m_library) m_library->setModelInUse(path);
    // A base model is said to be one where the user types, before its first reply surprises,
    // and plain text (its chats' format) says how a turn reads.
    m_chatPanel->setPlaceholder(m_session.modelInfo().inputPlaceholder());
    updateControls();
    m_chatPanel->focusInput();
    emit modelReady();
  });
  connect(m_bridge, &EngineBridge::modelLoaded, this, [this] {
    // The rest happens when the load's flow ends (ModelLoader::modelInUse, above): one place,
    // after the loader stops blocking turns, whatever order the queued signals arrive in.
    updateControls();  // the meter's context
  });
  // The load's outcome in the status line: the new model's description, or why there is none
  // (after the welcome page's own handling of it: buildWelcome connects first). Taken from the
  // flow's end, which comes before modelInUse, not from the bridge's signal: ModelLoad hears that
  // signal first and the window would be told the model is ready with "Loading…" still shown.
  connect(m_loader, &ModelLoader::ended, this, [this](bool ok, const QString& message) {
    if (ok) {
      m_status->setText(message);
      return;
    }
    if (message.isEmpty()) {
      m_status->setText(m_session.hasModel() ? tr("Loading cancelled; the model in use stays.") : tr("Loading cancelled; no model loaded."));
      if (!m_session.hasModel()) m_chatPanel->setPlaceholder(tr("No model loaded: File > Open model…"));
      return;
    }
    m_status->setText(explainLoadError(message).sentence);
    if (!m_session.hasModel()) m_chatPanel->setPlaceholder(tr("No model loaded"));
  });
}

// What the chat controller says, shown where it concerns the chat on screen (the list and the
// system prompt box follow it themselves).
void MainWindow::connectChats() {
  // The meter follows the chat shown (the panel redraws the chat itself).
  auto meterOf = [this](ChatId id) {
    if (id == currentChat()) updateMeter();
  };
  connect(m_chats, &ChatController::chatChanged, this, meterOf);
  connect(m_chats, &ChatController::engineChanged, this, meterOf);
  connect(m_chats, &ChatController::status, this, &MainWindow::setChatStatus);
  // A turn that waits for a paused engine says so (a lesson pauses it too).
  connect(m_chats, &ChatController::replyingChanged, this, [this](ChatId id, bool replying) {
    if (replying && m_pool->paused() && !m_lessons->sceneChatTitle(id))
      setChatStatus(id, tr("The engine is paused: this reply waits. “Pause” over the KV blocks resumes it."));
  });
  connect(m_chats, &ChatController::turnEnded, this, [this](ChatId id) {
    if (id == currentChat()) updateMeter();
    emit turnDone(id);
  });
}

const ChatRecord* MainWindow::chat(ChatId id) const {
  const ChatController::Chat* c = m_chats->chat(id);
  return c ? &c->record : nullptr;
}

QVector<ChatId> MainWindow::chatIds() const { return m_chatList->list()->orderShown(); }

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

ChatId MainWindow::currentChat() const { return m_chatPanel->chatShown(); }

void MainWindow::showRemoteEngines() { m_remoteMenus->showRemoteEngines(); }

bool MainWindow::setChatEngine(ChatId id, const RemoteEngineChoice& engine) {
  return m_chats->setRemoteEngine(id, engine);  // the list and the controls follow (engineChanged)
}

ChatId MainWindow::newChat() {
  m_lessons->leave();  // a chat of one's own: a lesson that is up ends
  const ChatId id = m_chats->create();
  selectChat(id);
  m_chatPanel->focusInput();
  return id;
}

namespace {
const QString kShownChatKey = QStringLiteral("ui/shown_chat");  // the chat shown last, opened at the next start
}  // namespace

// The chat shown when the app quit; else the one used last.
ChatId MainWindow::chatAtStart(const QVector<ChatId>& restored) const {
  bool ok = false;
  const ChatId shown = m_db->setting(kShownChatKey).toLongLong(&ok);
  if (ok && restored.contains(shown)) return shown;
  return *std::max_element(restored.begin(), restored.end(), [this](ChatId a, ChatId b) {
    return m_chats->chat(a)->record.lastActive < m_chats->chat(b)->record.lastActive;
  });
}

void MainWindow::selectChat(ChatId id) {
  if (!m_chats->chat(id)) return;
  if (id != currentChat()) {
    m_status->setText(m_chatStatus.value(id));
    m_db->setSetting(kShownChatKey, QString::number(id));
  }
  m_chatPanel->showChat(id);
  m_chatList->list()->select(id);
  m_prompts->showChat(id);
  updateControls();
}

// The buttons the chat shown allows, and the meter.
void MainWindow::updateControls() {
  m_chatPanel->setTurnsHeld(m_loader->isLoading());  // updates the panel's buttons
  updateMeter();
}

// The conversation the model reads next against the context, and what the chat holds now.
void MainWindow::updateMeter() {
  const ChatController::Chat* c = m_chats->chat(currentChat());
  if (c && c->record.remote.isSet())
    m_context->setText(tr("remote: %1 at %2").arg(c->record.remote.model, c->record.remote.url));
  else if (!c || m_session.contextLength() <= 0)
    m_context->setText(QString());
  else if (c->conversationTokens > m_session.contextLength()) {
    // Past the context (it was lowered, or the chat grew): what the next turn will do about it.
    const ContextPolicy policy =
        c->record.contextPolicy != ContextPolicy::appDefault ? c->record.contextPolicy : m_session.settings().contextPolicy;
    // A turn that failed on it (a message longer than the whole context) has said why in the chat.
    const QString next = !c->record.lastError.sentence.isEmpty() ? tr("its last turn failed (the chat says why)")
                         : policy == ContextPolicy::stopAndAsk ? tr("the next turn stops and asks")
                                                               : tr("the next turn drops the oldest turns");
    m_context->setText(tr("⚠ context %1 / %2 tokens: more than the model reads; %3")
                           .arg(c->conversationTokens)
                           .arg(m_session.contextLength())
                           .arg(next));
  } else {
    m_context->setText(tr("context %1 / %2 tokens · %3 KV blocks held")
                           .arg(c->conversationTokens)
                           .arg(m_session.contextLength())
                           .arg(c->blocksHeld));
  }
  m_context->setToolTip(tr("Tokens of this chat as the model reads it next (system prompt and messages in view), against "
                           "the context; and the KV blocks its sequences hold in the pool now, its reply's while it streams (0 after a "
                           "restart or a stop: the next turn reads the chat again, the prefix cache serving what it can)"));
}

ChatId MainWindow::forkChat(ChatId parentId, int messageCount) {
  QString draft;
  const ChatId id = m_chats->fork(parentId, messageCount, &draft);
  if (id < 0) return id;
  selectChat(id);
  if (!draft.isEmpty()) m_chatPanel->offerText(draft);  // the question forked at, to edit and send as the new branch
  return id;
}

void MainWindow::forkCurrentAtLatest() {
  if (const ChatRecord* r = chat(currentChat())) forkChat(r->id, static_cast<int>(r->messages.size()));
}

void MainWindow::nextChat(int step) {
  const QVector<ChatId> ids = chatIds();
  if (ids.isEmpty()) return;
  const auto n = ids.size();
  selectChat(ids[(ids.indexOf(currentChat()) + n + step) % n]);
}
