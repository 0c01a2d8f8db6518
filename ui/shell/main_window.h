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

#include "appcore/session/app_session.h"
#include "appcore/session/app_settings.h"
#include "appcore/session/chat_controller.h"
#include "appcore/bridge/model_info.h"
#include "appcore/chat/chat_record.h"
#include "ui/theme/app_theme.h"

class ApiServerSwitch;
class AppServices;
class ChatDatabase;
class ChatListPanel;
class ChatPanel;
class EngineBridge;
class KvDock;
class LessonRunner;
class LocalApiServer;
class ModelLibraryDialog;
class ModelLoader;
class PoolControl;
class QAction;
class QLabel;
class QMenu;
class QStackedWidget;
class RemoteEndpoints;
class RemoteMenus;
class SystemPromptBox;
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
  // The app's start: the model asked for, else the one used last, else the default model
  // (ModelLoad::modelAtStart); the welcome page when there is none (a first run), saying so
  // when the one used last is gone. threads as for loadModel.
  void openAtStart(const QString& requested, int threads = -1);
  bool welcomeShown() const;
  WelcomeView* welcomeView() const { return m_welcome; }
  ModelLibraryDialog* modelLibrary() const;  // null unless open
  QStringList modelFolders() const;  // the folders the user added to the library
  // Saves new settings; engine changes reload the model in use.
  void applySettings(const AppSettings& settings);
  // The local OpenAI-compatible API on this window's engine ("Serve API").
  ApiServerSwitch* apiServer() const { return m_api; }
  // The frame moved and shrunk onto the screen's available area (done once the window is first
  // framed: a size saved on a bigger screen, or a first start on a 768 px one).
  void fitOnScreen();

  ChatId currentChat() const;
  const ChatRecord* chat(ChatId id) const;
  QVector<ChatId> chatIds() const;
  bool isReplying(ChatId id) const;
  const ModelInfo& modelInfo() const { return m_session.modelInfo(); }
  LessonRunner* lessons() const { return m_lessons; }
  // Present the pool (View > Present the pool, F5; on by itself while a lesson runs, off when
  // it is left): the pool view takes most of the window, the chats (their list, the lessons
  // beside it) a narrow strip and the transcript steps aside, the sentence of the moment under
  // the pool in large type. Off restores the layout as it was.
  // ui/shell/main_window_present.cpp.
  void setPresenting(bool on);
  bool presenting() const { return m_presenting; }
  KvDock* kvDock() const { return m_kvDock; }
  int contextUsed(ChatId id) const;
  ReplyMetrics sampleMetrics(ChatId id, int sample) const;  // of the compare turn shown or awaiting a pick

 public slots:
  ChatId newChat();
  void selectChat(ChatId id);
  // A new chat from `chat` at its message messageCount (1-based), shown: at a reply it holds
  // messages 1..messageCount; at a user message those before it, and the input holds that
  // message to edit and send (see ChatController::fork).
  ChatId forkChat(ChatId chat, int messageCount);
  void setChatSampling(ChatId id, const std::optional<TurnSettings>& sampling);  // what its dialog's OK does
  void showModelLibrary();
  // Chat management (ui/shell/main_window_chats.cpp). A rename applies the title as the
  // ChatController trims it; delete asks nothing and offers Undo under the list for a few seconds.
  bool renameChat(ChatId id, const QString& title);
  void deleteChat(ChatId id);
  ChatId duplicateChat(ChatId id);
  // Markdown for a path ending .md, else JSON; false (and a dialog saying why) when it failed.
  bool exportChat(ChatId id, const QString& path);
  ChatId importChat(const QString& path);  // -1 (and a dialog saying why) when it failed
  void openSearchResult(ChatId chat, int message);
  // The View menu's theme: applied to the whole app now and at the next start.
  void setTheme(ThemeChoice choice);
  // Remote engines (their menus: ui/remote/remote_menus.h): File > Remote engines, and where a chat runs.
  void showRemoteEngines();
  void showToolServers();  // File > Tool servers: the user's MCP servers and mcp.json (ToolServersDialog)
  bool setChatEngine(ChatId id, const RemoteEngineChoice& engine);  // unset: this machine
  RemoteEndpoints* remoteEndpoints() const { return m_remoteEndpoints; }
  ChatPanel* chatPanel() const { return m_chatPanel; }  // the chat shown: its input, Send, Stop, Regenerate

 signals:
  void modelReady();
  void turnDone(ChatId chat);

 protected:
  // The window's size and docks are saved on close and restored at the first show; with none
  // saved, the docks take a share of the window that leaves the chat most of it.
  void showEvent(QShowEvent* event) override;
  void closeEvent(QCloseEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;  // presenting: the pool keeps the room (main_window_present.cpp)

 private:
  QWidget* buildLeftPanel();  // the chat list above the system prompt
  void buildChatPanel();
  void nextChat(int step);  // +1 or -1 in the list's order, wrapping
  ChatId chatAtStart(const QVector<ChatId>& restored) const;
  void forkCurrentAtLatest();
  void renameCurrentChat();  // the in-place editor in the list
  void showSearch();  // focuses the search box over the chat list
  QString chatFolder() const;             // where Export and Import open
  void setChatFolder(const QString& file);  // file's folder, for the next time
  void showSettings();
  void showCompareColumns();
  void showChatSampling();  // the current chat's sampling settings (ChatSamplingDialog)
  void showShortcuts();
  void showAbout();
  void showModelInfo();  // the model in use (ModelInfoDialog)
  void buildKvDock();
  void buildLessonsDock();  // ui/lessons/
  void buildPresentMode();  // F5 and the lessons' own presenting (main_window_present.cpp)
  void layOutPresenting();
  void buildActions();
  // ui/shell/main_window_settings.cpp: the File menu, settings, compare columns.
  void buildFileMenu();
  // ui/shell/main_window_chats.cpp: the Chat, View and Help menus.
  void buildChatMenu();
  void buildViewMenu();
  void buildHelpMenu();
  void applySavedTheme();
  void onChatRemoved(ChatId id, ChatId next);
  void showError(const QString& objectName, const QString& sentence, const QString& detail);
  // The chat shown's status line, kept per chat so a switch never shows another chat's.
  void setChatStatus(ChatId id, const QString& text);
  void buildWelcome();
  void setModelFolders(const QStringList& folders);
  void fillRecentMenu();
  void connectBridge();
  void connectChats();
  void updateControls();
  void updateMeter();

  AppSession& m_session;
  ChatDatabase* m_db = nullptr;
  EngineBridge* m_bridge = nullptr;
  ChatController* m_chats = nullptr;  // the session's
  RemoteEndpoints* m_remoteEndpoints = nullptr;  // the session's
  PoolControl* m_pool = nullptr;  // the session's
  bool m_shownOnce = false;
  LessonRunner* m_lessons = nullptr;
  ModelLoader* m_loader = nullptr;
  QMenu* m_recentMenu = nullptr;
  RemoteMenus* m_remoteMenus = nullptr;
  QMenu* m_chatMenu = nullptr;  // also the chat list's context menu
  QMenu* m_viewMenu = nullptr;
  QAction* m_presentAction = nullptr;
  bool m_presenting = false;
  bool m_presentingForLesson = false;  // turned on by a lesson's start (not by F5): off when it is left
  QByteArray m_stateBeforePresenting;  // the docks as they were
  QAction* m_pinAction = nullptr;
  QHash<ChatId, QString> m_chatStatus;
  ChatListPanel* m_chatList = nullptr;
  SystemPromptBox* m_prompts = nullptr;
  KvDock* m_kvDock = nullptr;
  QStackedWidget* m_central = nullptr;  // the chat panel, or the welcome page
  ChatPanel* m_chatPanel = nullptr;
  WelcomeView* m_welcome = nullptr;
  QPointer<ModelLibraryDialog> m_library;
  QLabel* m_status = nullptr;
  QLabel* m_context = nullptr;
  LocalApiServer* m_apiServer = nullptr;  // AppServices'; null when built without the server
  ApiServerSwitch* m_api = nullptr;
};
