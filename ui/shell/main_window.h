#pragma once
// The app's main window: the chat list (a fork tree) and the shared system prompt on the left,
// the current chat (or its compare columns) in the middle, the "KV blocks" dock on the right.
// It shows; it owns no chat state and no service. The chats and their turns, the pool shown
// and stepped, the settings and the model in use are the AppSession's (every chat replies at
// the same time as the others through the one EngineBridge on the engine thread; switching
// chats only switches what is shown); the session, the database, the engine thread and the
// local API server are AppServices', handed in.

#include <QHash>
#include <QMainWindow>
#include <QPointer>
#include <QTimer>

#include <functional>

#include "appcore/session/app_session.h"
#include "appcore/session/app_settings.h"
#include "appcore/session/chat_controller.h"
#include "appcore/bridge/model_info.h"
#include "appcore/chat/chat_record.h"
#include "appcore/pool/pool_frame.h"
#include "ui/theme/app_theme.h"

class QAction;
class QCheckBox;
class QLineEdit;
class QComboBox;
class QLabel;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QStackedWidget;
class QToolBar;
class QToolButton;
class ChatActionRow;
class LessonRunner;
class LocalApiServer;
class ModelLoader;
class QMenu;
class AppServices;
class ChatDatabase;
class ChatListWidget;
class ChatSearchResults;
class CompareView;
class EngineBridge;
class TranscriptView;
class ModelLibraryDialog;
class PoolControl;
class RemoteEndpoints;
class WelcomeView;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  // services must outlive the window.
  explicit MainWindow(AppServices& services, QWidget* parent = nullptr);
  ~MainWindow() override;

  // Loads a model with the saved settings (threads >= 0 overrides theirs for this load), a
  // progress dialog showing; see ModelLoader.
  void loadModel(const QString& path, int threads = -1);
  const AppSettings& settings() const { return m_session.settings(); }
  AppSession& session() { return m_session; }
  // The welcome page in place of the chat (no model in use: a first run, a file that is gone),
  // with a sentence under its buttons when message is given. ui/shell/main_window_library.cpp.
  void showWelcome(const QString& message = QString(), bool error = false);
  // The app's start: the model asked for, else the default model; the welcome page when none
  // was asked for and the default one is not there (a first run). threads as for loadModel.
  void openAtStart(const QString& requested, int threads = -1);
  bool welcomeShown() const;
  WelcomeView* welcomeView() const { return m_welcome; }
  ModelLibraryDialog* modelLibrary() const;  // null unless open
  QStringList modelFolders() const;  // the folders the user added to the library
  // Saves new settings; engine changes reload the model in use.
  void applySettings(const AppSettings& settings);
  // The local OpenAI-compatible API on this window's engine (when built with the server):
  // port 0 picks a free one. Saved, and restored at start. apiServerChanged says the outcome.
  void setApiServerEnabled(bool on);
  void setApiPort(int port);
  QString apiServerUrl() const;  // empty when it is not running

  ChatId currentChat() const { return m_current; }
  const ChatRecord* chat(ChatId id) const;
  QVector<ChatId> chatIds() const;
  bool isReplying(ChatId id) const;
  const ModelInfo& modelInfo() const { return m_session.modelInfo(); }
  LessonRunner* lessons() const { return m_lessons; }
  int contextUsed(ChatId id) const;
  ReplyMetrics sampleMetrics(ChatId id, int sample) const;  // of the compare turn shown or awaiting a pick

 public slots:
  ChatId newChat();
  void selectChat(ChatId id);
  void send();
  void stop();
  void regenerate();
  void copyLastReply();
  // A new chat from `chat` at its message messageCount (1-based), shown: at a reply it holds
  // messages 1..messageCount; at a user message those before it, and the input holds that
  // message to edit and send (see ChatController::fork).
  ChatId forkChat(ChatId chat, int messageCount);
  void forkCurrentAtLatest();
  void pickSample(int sample);
  void nextChat();
  void previousChat();
  void setEnginePaused(bool paused);
  void showSettings();
  void showCompareColumns();
  void showChatSampling();  // the current chat's sampling settings (ChatSamplingDialog)
  void setChatSampling(ChatId id, const std::optional<TurnSettings>& sampling);  // what its dialog's OK does
  void showModelLibrary();
  void stepEngine();
  // Chat management (ui/shell/main_window_chats.cpp). A rename applies the title as the
  // ChatController trims it; delete asks first (a dialog naming what goes and what stays).
  void renameCurrentChat();  // the in-place editor in the list
  bool renameChat(ChatId id, const QString& title);
  void deleteChat(ChatId id);
  ChatId duplicateChat(ChatId id);
  void setChatPinned(ChatId id, bool pinned);
  // Markdown for a path ending .md, else JSON; false (and a dialog saying why) when it failed.
  bool exportChat(ChatId id, const QString& path);
  ChatId importChat(const QString& path);  // -1 (and a dialog saying why) when it failed
  void showSearch();  // focuses the search box over the chat list
  void openSearchResult(ChatId chat, int message);
  // The View menu's theme: applied to the whole app now and at the next start.
  void setTheme(ThemeChoice choice);
  void showShortcuts();
  void showAbout();
  void showModelInfo();  // the model in use (ModelInfoDialog)
  // Remote engines (ui/shell/main_window_remote.cpp): File > Remote engines, and where a chat runs.
  void showRemoteEngines();
  bool setChatEngine(ChatId id, const RemoteEngineChoice& engine);  // unset: this machine
  RemoteEndpoints* remoteEndpoints() const { return m_remoteEndpoints; }

 signals:
  void modelReady();
  void turnDone(ChatId chat);
  void apiServerChanged(const QString& url, const QString& error);  // url empty: stopped or failed

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;  // the search box's Esc and Down
  // The window's size and docks are saved on close and restored at the first show; with none
  // saved, the docks take a share of the window that leaves the chat most of it.
  void showEvent(QShowEvent* event) override;
  void closeEvent(QCloseEvent* event) override;
  void changeEvent(QEvent* event) override;  // a new palette: our drawn icons again

 private:
  QWidget* buildLeftPanel();
  QWidget* buildChatPanel();  // ui/shell/main_window_chat_panel.cpp, with refreshIcons and the chat's sampling
  void connectTranscript();
  ChatActionRow* buildActionRow(QWidget* panel);
  void buildKvDock();
  void buildLessonsDock();  // ui/lessons/
  void buildActions();
  // ui/shell/main_window_settings.cpp: the File menu, settings, compare columns, the local API.
  void buildApiServer(QToolBar* toolBar);
  void restoreApiServer();
  void buildFileMenu();
  // ui/shell/main_window_chats.cpp: the chat list's search, the Chat, View and Help menus.
  QWidget* buildChatList(QWidget* parent);
  void buildChatMenu();
  void fillRunOnMenu(QMenu* menu);  // Chat > Run this chat on: this machine, each remote model
  void fillWatchPoolMenu(QMenu* menu);  // View > Watch a remote pool: this machine's, each server's
  void buildViewMenu();
  void buildHelpMenu();
  void applySavedTheme();
  void runSearch();
  void onChatRemoved(ChatId id, const QVector<ChatId>& orphans);
  void showError(const QString& objectName, const QString& sentence, const QString& detail);
  // The chat shown's status line, kept per chat so a switch never shows another chat's.
  void setChatStatus(ChatId id, const QString& text);
  void buildWelcome();
  void setModelFolders(const QStringList& folders);
  void fillRecentMenu();
  void connectBridge();
  void connectChats();
  void addChatToList(ChatId id);
  // The settings of the next turn, from the samples box and "Vary settings"; columnTitles:
  // how each compare column samples.
  TurnSettings nextTurnSettings(QStringList& columnTitles) const;
  bool canStartTurn() const;
  void showCurrent();
  void updateControls();
  void onSystemPromptEdited();
  void refreshIcons();
  const ChatController::Chat* current() const;

  AppSession& m_session;
  ChatDatabase* m_db = nullptr;
  EngineBridge* m_bridge = nullptr;
  ChatController* m_chats = nullptr;  // the session's
  RemoteEndpoints* m_remoteEndpoints = nullptr;  // the session's
  PoolControl* m_pool = nullptr;  // the session's
  void connectPool();  // the pool the session shows, drawn in the KV dock
  void showPoolOf(const QString& title);  // the view's pool: this machine's (title empty) or a remote one's
  bool m_showsLocalPool = true;  // this machine's frames are drawn (not a watched server's or vLLM's)
  void askVllmPool();  // View > Watch a remote pool > vLLM KV events…
  ChatId m_current = -1;
  int m_editing = -1;  // the sent question being edited in the input (a new version on Send); -1: none
  bool m_shownOnce = false;
  LessonRunner* m_lessons = nullptr;  // of the model in use; empty before the first load
  ModelLoader* m_loader = nullptr;
  QMenu* m_recentMenu = nullptr;

  QTimer m_renderTimer;  // tokens arrive faster than a person reads: redraw at ~30 Hz
  QTimer m_saveSystemPromptTimer;
  ChatListWidget* m_list = nullptr;
  QLineEdit* m_search = nullptr;
  ChatSearchResults* m_searchResults = nullptr;
  QStackedWidget* m_listStack = nullptr;  // the chat list, or the search's results
  QTimer m_searchTimer;                   // searches once typing pauses
  QMenu* m_chatMenu = nullptr;            // also the chat list's context menu
  QMenu* m_viewMenu = nullptr;
  QAction* m_pinAction = nullptr;
  // What the input held for each chat not shown (and the question it was editing, -1: none).
  struct Draft {
    QString text;
    int editing = -1;
  };
  QHash<ChatId, Draft> m_drafts;
  QHash<ChatId, QString> m_chatStatus;
  QStackedWidget* m_central = nullptr;  // the chat panel, or the welcome page
  QWidget* m_chatPanel = nullptr;
  WelcomeView* m_welcome = nullptr;
  QPointer<ModelLibraryDialog> m_library;
  QStackedWidget* m_stack = nullptr;
  TranscriptView* m_transcript = nullptr;
  CompareView* m_compare = nullptr;
  QPlainTextEdit* m_input = nullptr;
  QPlainTextEdit* m_sharedPromptEdit = nullptr;
  QPlainTextEdit* m_chatPromptEdit = nullptr;
  QCheckBox* m_overridePrompt = nullptr;
  QComboBox* m_contextPolicy = nullptr;  // the chat's: app default, drop oldest turns, stop and ask
  QSpinBox* m_samples = nullptr;
  QCheckBox* m_varySettings = nullptr;
  QCheckBox* m_beamSearch = nullptr;
  ChatActionRow* m_actionRow = nullptr;
  QToolButton* m_chatSampling = nullptr;  // the chat's sampling: the app's defaults or its own
  QToolButton* m_send = nullptr;
  QToolButton* m_stop = nullptr;
  QToolButton* m_regenerate = nullptr;
  QToolButton* m_copy = nullptr;
  QLabel* m_status = nullptr;
  QLabel* m_context = nullptr;
  LocalApiServer* m_api = nullptr;  // AppServices'; null when built without the server
  QAction* m_apiAction = nullptr;
  QLabel* m_apiLabel = nullptr;
};
