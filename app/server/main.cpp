// pagedchat-server: the OpenAI-compatible API on the engine, headless. `pagedchat-cli serve`
// runs this program (the CLI itself stays Qt-free). It binds first and loads the model after,
// so /health answers "loading" (503) meanwhile; a model that fails to load ends the process
// with the reason on stderr. SIGTERM or SIGINT ends it gracefully (exit 0): no new connections,
// the requests in flight finish within --shutdown-timeout or are cut short with an error
// event and [DONE]; a second signal cuts them short at once.

#include <QCoreApplication>
#include <QThread>

#include <sys/resource.h>

#include <cstdio>

#include "app/server/server_arguments.h"
#include "app/common/termination_signals.h"
#include "server/api/api_server.h"
#include "server/engine/engine_host.h"

namespace {

// Each connection is a descriptor: take what the hard limit allows (as most servers do), so
// the default connection cap sits below a limit that is not the shell's 1024 by accident.
void raiseDescriptorLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

}  // namespace

int main(int argc, char** argv) {
  QCoreApplication app(argc, argv);
  QCoreApplication::setApplicationName("pagedchat-server");
  ServerSetup setup;
  if (const int rc = parseServerArguments(app, setup); rc >= 0) return rc;
  raiseDescriptorLimit();
  const EngineHost::Config& hc = setup.host;
  const ServerOptions& so = setup.server;

  EngineHost host(hc);
  QThread engineThread;
  engineThread.setObjectName("engine");
  host.moveToThread(&engineThread);
  ApiServer server(so, host.router());
  const quint16 port = server.start();
  if (port == 0) {
    std::fprintf(stderr, "pagedchat-server: error: cannot listen on %s:%u\n", qPrintable(so.host.toString()), unsigned(so.port));
    return 1;
  }
  // Tests and scripts read this line to find the port.
  std::printf("pagedchat-server: listening on http://%s:%u (model '%s'%s)\n", qPrintable(so.host.toString()), unsigned(port),
              qPrintable(hc.modelId), so.apiKey.isEmpty() ? "" : ", API key required");
  std::fflush(stdout);
  QObject::connect(&host, &EngineHost::loaded, &app, [](const QString& d) {
    std::printf("pagedchat-server: model loaded: %s\n", qPrintable(d));
    std::fflush(stdout);
  });
  QObject::connect(&host, &EngineHost::loadFailed, &app, [](const QString& e) {
    std::fprintf(stderr, "pagedchat-server: error: %s\n", qPrintable(e));
    QCoreApplication::exit(1);
  });
  if (setup.logRequests)
    QObject::connect(&server, &ApiServer::requestEnded, &app, [](const ApiLogEntry& e) {
      std::fprintf(stderr, "%s\n", qPrintable(e.line()));
      std::fflush(stderr);
    });
  TerminationSignals termination;
  QObject::connect(&termination, &TerminationSignals::requested, &server, [&server, &setup](int signalNumber) {
    std::printf("pagedchat-server: signal %d: shutting down (%d requests in flight, %d s to finish)\n", signalNumber,
                server.numSessions(), setup.shutdownTimeoutMs / 1000);
    std::fflush(stdout);
    server.shutdown(setup.shutdownTimeoutMs, [] { QCoreApplication::exit(0); });
  });
  engineThread.start();
  QMetaObject::invokeMethod(&host, &EngineHost::load, Qt::QueuedConnection);
  const int rc = app.exec();
  engineThread.quit();
  engineThread.wait();
  return rc;
}
