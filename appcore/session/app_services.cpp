// Building and tearing down the app's services in the order they depend on each other.
#include "appcore/session/app_services.h"

#include "appcore/bridge/engine_bridge.h"
#include "appcore/session/app_session.h"
#include "appcore/session/chat_controller.h"
#include "appcore/tools/mcp_servers.h"
#ifdef PAGEDCHAT_HAVE_SERVER
#include "appcore/bridge/local_api_server.h"
#endif

AppServices::AppServices(const QString& databasePath)
    : m_lock(std::make_unique<InstanceLock>(databasePath)), m_db(std::make_unique<ChatDatabase>(databasePath)) {
  m_bridge = new EngineBridge();
  m_bridge->moveToThread(&m_engineThread);
  QObject::connect(&m_engineThread, &QThread::finished, m_bridge, &QObject::deleteLater);
  m_engineThread.setObjectName(QStringLiteral("engine"));
  m_engineThread.start();
#ifdef PAGEDCHAT_HAVE_SERVER
  m_api = new LocalApiServer(m_bridge->apiRouter());
#endif
  m_tools = std::make_unique<McpServers>();
  m_session = std::make_unique<AppSession>(*m_db, m_bridge);
  m_session->chats().setTools(m_tools.get());
}

AppServices::~AppServices() {
  m_session.reset();  // its chats' turns end, a watched server gets its own pool back
#ifdef PAGEDCHAT_HAVE_SERVER
  delete m_api;  // the server's requests go before the engine does
#endif
  m_tools.reset();
  m_engineThread.quit();
  m_engineThread.wait();
}
