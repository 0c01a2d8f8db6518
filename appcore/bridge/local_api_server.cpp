// Starting and stopping the app's API server on its thread.
#include "appcore/bridge/local_api_server.h"

#include <QMetaObject>

#include <utility>

#include "server/engine/request_router.h"

LocalApiServer::LocalApiServer(std::shared_ptr<RequestRouter> router, QObject* parent)
    : QObject(parent), m_router(std::move(router)) {
  m_thread.setObjectName(QStringLiteral("api"));
}

// Not stop(): a shutdown's `done` (the app's close) is not called while the app is going anyway.
LocalApiServer::~LocalApiServer() {
  m_shutdownDone = nullptr;
  stopServer();
}

void LocalApiServer::start(const ServerOptions& options) {
  stop();
  m_thread.start();
  m_server = new ApiServer(options, *m_router);
  m_server->moveToThread(&m_thread);
  // Each line as its response ends, here on the UI's thread (queued).
  connect(m_server, &ApiServer::requestEnded, this, [this](const ApiLogEntry& entry) {
    if (m_log.size() >= kLogLength) m_log.remove(0, m_log.size() - kLogLength + 1);
    m_log.append(entry);
    emit requestLogged(entry);
  });
  // listen() must run on the thread whose event loop serves the sockets.
  QMetaObject::invokeMethod(m_server, [this, server = m_server, options] {
    const quint16 port = server->start();
    QMetaObject::invokeMethod(this, [this, server, port, options] {
      if (server != m_server) return;  // stopped meanwhile
      if (port == 0) {
        stop();
        emit failed(tr("Cannot listen on %1:%2 (is the port in use?)").arg(options.host.toString()).arg(options.port));
        return;
      }
      m_url = QStringLiteral("http://%1:%2/v1").arg(options.host.toString()).arg(port);
      emit started(m_url);
    }, Qt::QueuedConnection);
  }, Qt::QueuedConnection);
}

void LocalApiServer::shutdown(int graceMs, std::function<void()> done) {
  if (!m_server) {
    done();
    return;
  }
  m_shutdownDone = std::move(done);
  QMetaObject::invokeMethod(m_server, [this, server = m_server, graceMs] {
    server->shutdown(graceMs, [this, server] {
      QMetaObject::invokeMethod(this, [this, server] {
        if (server == m_server) stop();  // not one started since
      }, Qt::QueuedConnection);
    });
  }, Qt::QueuedConnection);
}

void LocalApiServer::stop() {
  std::function<void()> done = std::exchange(m_shutdownDone, nullptr);
  stopServer();
  if (done) done();
}

void LocalApiServer::stopServer() {
  if (!m_server) return;
  // Deleted on its own thread (its sockets live there), before that thread ends.
  QMetaObject::invokeMethod(m_server, [server = m_server] { delete server; }, Qt::BlockingQueuedConnection);
  m_server = nullptr;
  m_url.clear();
  m_thread.quit();
  m_thread.wait();
}
