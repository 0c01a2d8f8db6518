#pragma once
// The app's session: what the window shows and the lessons drive, without a widget. It owns
// the chats and their turns (ChatController), the remote engines a chat can run on and their
// bridge, the pool shown and stepped (PoolControl), the model's load (ModelLoad), the app's
// settings, and what is known of the model in use. AppServices makes it over the database and
// the engine thread's bridge. As qBittorrent's BitTorrent::Session is to its MainWindow: the
// window and the lessons ask it to act and show what it says.

#include <QObject>
#include <QString>

#include "appcore/bridge/model_info.h"
#include "appcore/session/app_settings.h"

class ChatController;
class ChatDatabase;
class EngineBridge;
class ModelLoad;
class PoolControl;
class RemoteBridge;
class RemoteEndpoints;

class AppSession : public QObject {
  Q_OBJECT
 public:
  // db outlives the session; bridge lives on the engine thread (null: no engine, as in some tests).
  AppSession(ChatDatabase& db, EngineBridge* bridge, QObject* parent = nullptr);
  ~AppSession() override;

  ChatController& chats() { return *m_chats; }
  const ChatController& chats() const { return *m_chats; }
  PoolControl& pool() { return *m_pool; }
  ModelLoad& modelLoad() { return *m_load; }
  RemoteEndpoints& remoteEndpoints() { return *m_remoteEndpoints; }
  ChatDatabase& database() { return m_db; }
  EngineBridge* bridge() const { return m_bridge; }  // lives on the engine thread

  // The settings in effect, saved on change (settingsChanged). A change of engine settings
  // reloads the model in use (once a load under way has ended, if one is); the window shows the
  // load's progress as it shows any load.
  const AppSettings& settings() const { return m_settings; }
  // modelPath (when given): that model instead of the one in use, loaded even with the same settings.
  void applySettings(const AppSettings& settings, const QString& modelPath = QString());
  // These settings and a fresh engine of them even when they are the same (a lesson's scene
  // starts from an empty pool), of modelPath when given (a lesson that needs another model).
  // False: no model in use to reload, or a load runs.
  bool loadFresh(const AppSettings& settings, const QString& modelPath = QString());

  // The model in use: set when a load has ended with a new engine.
  bool hasModel() const { return m_modelReady; }
  const ModelInfo& modelInfo() const { return m_modelInfo; }
  int contextLength() const { return m_contextLength; }

 signals:
  void modelReady();  // a new engine is in use: replies in flight on the old one ended with it
  void contextLengthChanged(int contextLength);
  void settingsChanged();

 private:
  void setSettings(const AppSettings& settings);  // saved; settingsChanged
  void modelInUse();                              // ModelLoad's new engine: the chats' turns ended with the old

  ChatDatabase& m_db;
  EngineBridge* m_bridge;
  ChatController* m_chats = nullptr;
  RemoteEndpoints* m_remoteEndpoints = nullptr;
  RemoteBridge* m_remoteBridge = nullptr;
  PoolControl* m_pool = nullptr;
  ModelLoad* m_load = nullptr;
  AppSettings m_settings;
  ModelInfo m_modelInfo;
  int m_contextLength = 0;
  bool m_modelReady = false;
};
