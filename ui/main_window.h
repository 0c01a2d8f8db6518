#pragma once
// The app's main window: the chat list (a fork tree) and the shared system prompt on the left,
// the current chat (or its compare columns) in the middle, the "KV blocks" dock on the right.
// Every chat replies at the same time as the others through the one EngineBridge, which runs
// on the engine thread; switching chats only switches what is shown. Chats are saved to
// SQLite after each change and restored at start.

#include <QMainWindow>
#include <QThread>
#include <QTimer>

#include <map>
#include <memory>

#include "ui/app_settings.h"
#include "ui/chat_database.h"
#include "ui/chat_record.h"
#include "ui/pool_frame.h"

class QAction;
class QCheckBox;
class QLabel;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QStackedWidget;
class QToolBar;
class LocalApiServer;
class ModelLoader;
class QMenu;
class ChatListWidget;
class CompareView;
class EngineBridge;
class TranscriptView;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(const QString& databasePath = ChatDatabase::defaultPath(), QWidget* parent = nullptr);
  ~MainWindow() override;

  // Loads a model with the saved settings (threads >= 0 overrides theirs for this load), a
  // progress dialog showing; see ModelLoader.
  void loadModel(const QString& path, int threads = -1);
  const AppSettings& settings() const { return m_settings; }
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
  int contextUsed(ChatId id) const;
  ReplyMetrics sampleMetrics(ChatId id, int sample) const;  // of the compare turn shown or awaiting a pick

 public slots:
  ChatId newChat();
  void selectChat(ChatId id);
  void send();
  void stop();
  void regenerate();
  void copyLastReply();
  // A new chat holding the first messageCount messages of `chat`.
  ChatId forkChat(ChatId chat, int messageCount);
  void forkCurrentAtLatest();
  void pickSample(int sample);
  void nextChat();
  void previousChat();
  void setEnginePaused(bool paused);
  void showSettings();
  void showCompareColumns();
  void stepEngine();

 signals:
  void modelReady();
  void turnDone(ChatId chat);
  void poolFrame(const PoolFrame& frame);  // the KV block-pool view connects here
  void apiServerChanged(const QString& url, const QString& error);  // url empty: stopped or failed

 private:
  struct ChatUi {
    ChatRecord record;
    bool replying = false;
    int numSamples = 1;  // of the turn in flight or awaiting a pick
    QVector<QString> samples;
    QVector<ReplyMetrics> sampleMetrics;
    bool awaitingPick = false;
    QStringList columnTitles;  // compare with "Vary settings": how each column samples
    int contextUsed = 0;  // tokens the engine holds for the chat
  };

  QWidget* buildLeftPanel();
  QWidget* buildChatPanel();
  void buildKvDock();
  void buildActions();
  // ui/main_window_settings.cpp: the File menu, settings, compare columns, the local API.
  void buildApiServer(QToolBar* toolBar);
  void restoreApiServer();
  void buildFileMenu();
  void fillRecentMenu();
  void connectBridge();
  void addChatToList(const ChatUi& c);
  void submitTurn(ChatUi& c);
  void showCurrent();
  void updateControls();
  void save(const ChatUi& c);
  void onSystemPromptEdited();
  ChatUi* current();
  template <class F>
  void onEngine(F f);

  std::unique_ptr<ChatDatabase> m_db;
  QThread m_engineThread;
  EngineBridge* m_bridge = nullptr;
  std::map<ChatId, ChatUi> m_chats;
  ChatId m_current = -1;
  int m_contextLength = 0;
  bool m_modelReady = false;
  QString m_sharedSystemPrompt;
  AppSettings m_settings;
  ModelLoader* m_loader = nullptr;
  QMenu* m_recentMenu = nullptr;

  QTimer m_renderTimer;  // tokens arrive faster than a person reads: redraw at ~30 Hz
  QTimer m_saveSystemPromptTimer;
  ChatListWidget* m_list = nullptr;
  QStackedWidget* m_stack = nullptr;
  TranscriptView* m_transcript = nullptr;
  CompareView* m_compare = nullptr;
  QPlainTextEdit* m_input = nullptr;
  QPlainTextEdit* m_sharedPromptEdit = nullptr;
  QPlainTextEdit* m_chatPromptEdit = nullptr;
  QCheckBox* m_overridePrompt = nullptr;
  QSpinBox* m_samples = nullptr;
  QCheckBox* m_varySettings = nullptr;
  QPushButton* m_send = nullptr;
  QPushButton* m_stop = nullptr;
  QPushButton* m_regenerate = nullptr;
  QPushButton* m_copy = nullptr;
  QLabel* m_status = nullptr;
  QLabel* m_context = nullptr;
  LocalApiServer* m_api = nullptr;  // null when built without the server
  QAction* m_apiAction = nullptr;
  QLabel* m_apiLabel = nullptr;
};
