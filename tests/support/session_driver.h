#pragma once
// Drives the app's session (appcore) as the window would, with no widget: a fresh data folder,
// a model loaded through the engine thread's bridge with the session's settings, turns sent
// through the ChatController. For the session's own suites (tests/appcore/session).

#include <QFile>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QtTest>

#include "appcore/bridge/engine_bridge.h"
#include "appcore/chat/chat_database.h"
#include "appcore/session/app_services.h"
#include "appcore/session/app_session.h"
#include "appcore/session/chat_controller.h"
#include "appcore/session/model_load.h"

namespace pagedchat::test {

inline void useFreshSessionFolder() {
  QStandardPaths::setTestModeEnabled(true);
  for (const char* suffix : {"", "-wal", "-shm"}) QFile::remove(ChatDatabase::defaultPath() + QLatin1String(suffix));
}

// The session's load with its settings (threads overridden), as the window starts it, less its
// progress bar; true once the new engine is in use.
inline bool loadIntoSession(AppServices& services, const QString& model, int threads = 2) {
  AppSession& session = services.session();
  EngineBridge::Config config = session.settings().engineConfig();
  config.threads = threads;
  QSignalSpy ended(&session.modelLoad(), &ModelLoad::ended);
  if (!session.modelLoad().load(model, config)) return false;
  if (!QTest::qWaitFor([&] { return !ended.isEmpty(); }, 60000)) return false;
  return ended.first().at(0).toBool() && session.hasModel();
}

// A greedy turn of at most maxTokens on `chat`, run to its end; false when it did not end.
inline bool replyAndWait(AppSession& session, ChatId chat, const QString& text, int maxTokens = 24) {
  TurnSettings turn = session.settings().sampling;
  turn.temperature = 0;
  turn.maxTokens = maxTokens;
  QSignalSpy ended(&session.chats(), &ChatController::turnEnded);
  if (!session.chats().send(chat, text, turn, {})) return false;
  return QTest::qWaitFor([&] { return !ended.isEmpty(); }, 120000);
}

}  // namespace pagedchat::test
