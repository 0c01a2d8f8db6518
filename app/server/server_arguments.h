#pragma once
// pagedchat-server's command line: what it sets up, and every refusal of a bad option, with its
// reason, before anything binds or loads.

#include <QCoreApplication>

#include "server/api/api_server.h"
#include "server/engine/engine_host.h"

struct ServerSetup {
  EngineHost::Config host;
  ServerOptions server;
  int shutdownTimeoutMs = 5000;  // SIGTERM: how long requests in flight may take to finish
  bool logRequests = false;      // a line on stderr per request (ApiLogEntry::line)
};

// Fills `setup` from the command line. Returns -1 to go on, else the exit status (the reason
// is on stderr; --help has printed the usage and exits 0 inside).
int parseServerArguments(const QCoreApplication& app, ServerSetup& setup);
