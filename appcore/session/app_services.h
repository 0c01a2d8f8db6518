#pragma once
// What the app is made of apart from its window, and who owns it: the lock on the data folder,
// the chat database, the engine thread with the EngineBridge on it, (when built with the
// server) the local API server over the bridge's router, the user's MCP servers (their tools,
// which chats may call), and the session over them all
// (appcore/session/app_session.h: the chats, the pool shown, the settings). The app's main makes one and hands it
// to the window, as qBittorrent's src/app owns the session and hands it to the GUI; tests make
// their own. Destroyed after the window: the session first, the API server next (its requests go
// before the engine), then the MCP servers (their processes end), then the engine thread (the bridge and its engine are deleted on it), then the
// database, then the lock.

#include <QString>
#include <QThread>

#include <memory>

#include "appcore/chat/chat_database.h"
#include "appcore/session/instance_lock.h"

class AppSession;
class EngineBridge;
class LocalApiServer;
class McpServers;

class AppServices {
 public:
  // Takes the database's lock first: throws InstanceLock::Held, having asked the app that
  // holds it to show its window, when another app has these chats open.
  explicit AppServices(const QString& databasePath = ChatDatabase::defaultPath());
  ~AppServices();
  AppServices(const AppServices&) = delete;
  AppServices& operator=(const AppServices&) = delete;

  InstanceLock* instanceLock() const { return m_lock.get(); }  // raiseRequested: show the window
  ChatDatabase& database() { return *m_db; }
  EngineBridge* bridge() const { return m_bridge; }  // lives on the engine thread
  LocalApiServer* apiServer() const { return m_api; }  // null when built without the server
  AppSession& session() { return *m_session; }
  // Read from mcp.json in the app's configuration folder (McpServers::defaultConfigDir()).
  McpServers& tools() { return *m_tools; }

 private:
  std::unique_ptr<InstanceLock> m_lock;  // first: held before the database opens, until it closes
  std::unique_ptr<ChatDatabase> m_db;
  QThread m_engineThread;
  EngineBridge* m_bridge = nullptr;
  LocalApiServer* m_api = nullptr;  // owned; a plain pointer, as builds without the server lack the type
  std::unique_ptr<McpServers> m_tools;
  std::unique_ptr<AppSession> m_session;
};
