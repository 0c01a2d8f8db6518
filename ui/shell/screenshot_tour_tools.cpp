// The tour's tools scene (see screenshot_tour.h): a chat with the "files" server of mcp.json
// on (installer/screenshots.sh writes one that runs the mcp SDK's test server), read_file chosen
// for the next reply, a question about a file: tool-call-{light,dark}.png shows the call's card
// waiting for consent; after Allow, tool-result-{light,dark}.png shows its result opened and the
// reply that read it; tool-servers.png, the Tool servers dialog. Without such a server the scene
// is left out, said on stderr.
#include "ui/shell/screenshot_tour.h"

#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QStandardPaths>

#include <cstdio>

#include "appcore/session/app_session.h"
#include "appcore/tools/mcp_connection.h"
#include "appcore/tools/mcp_servers.h"
#include "ui/chat/chat_tools_button.h"
#include "ui/chat/transcript_view.h"
#include "ui/dialogs/tool_servers_dialog.h"
#include "ui/shell/main_window.h"
#include "ui/theme/app_theme.h"

namespace {

// Runs the event loop until done() or `ms` pass; whether done() came true.
bool waitUntil(const std::function<bool()>& done, int ms) {
  QElapsedTimer clock;
  clock.start();
  while (!done() && clock.elapsed() < ms) QApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);
  return done();
}

}  // namespace

bool ScreenshotTour::shootTools() {
  ChatController& chats = m_window.session().chats();
  McpServers* servers = chats.tools();
  McpConnection* files = servers ? servers->connection(QStringLiteral("files")) : nullptr;
  if (!files || !waitUntil([&] { return files->state() == McpConnection::State::Ready; }, 30000)) {
    std::fprintf(stderr, "screenshot tour: no ready MCP server named 'files' in mcp.json: the tools scene is left out\n");
    return true;
  }
  const QString notes = QDir(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation)).filePath(QStringLiteral("notes.txt"));
  QDir().mkpath(QFileInfo(notes).path());
  QFile f(notes);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) return true;
  f.write("Shopping: bread, apples, tea.\nThe secret word is marmalade.\n");
  f.close();

  const ChatId id = m_window.newChat();
  TurnSettings greedy = m_window.settings().sampling;
  greedy.temperature = 0;  // a 135M model's forced call, written the same way every time
  m_window.setChatSampling(id, greedy);
  chats.setChatTools(id, {.servers = {QStringLiteral("files")}, .maxCallsPerTurn = 2});
  if (auto* button = m_window.findChild<ChatToolsButton*>(QStringLiteral("chatTools"))) emit button->forcedToolChosen(QStringLiteral("read_file"));
  if (!send(QStringLiteral("Read the file %1 and tell me the secret word.").arg(notes))) return true;
  if (!waitUntil([&] { return chats.chat(id)->toolCall.has_value() || !chats.chat(id)->replying; }, kTurnTimeoutMs) ||
      !chats.chat(id)->toolCall) {
    std::fprintf(stderr, "screenshot tour: the model made no tool call: the tools scene is left out\n");
    return true;
  }
  auto shootBoth = [&](const QString& stem) {
    for (const ThemeChoice theme : {ThemeChoice::light, ThemeChoice::dark}) {
      m_window.setTheme(theme);
      m_window.resize(1366, 768);
      waitUntil([] { return false; }, 300);
      if (!save(&m_window, QStringLiteral("%1-%2.png").arg(stem, themeChoiceName(theme)))) return false;
    }
    m_window.setTheme(ThemeChoice::system);
    return true;
  };
  if (!shootBoth(QStringLiteral("tool-call"))) return false;
  chats.answerToolCall(id, chats.chat(id)->toolCall->callId, ChatController::ToolConsent::allowOnce);
  // A further call is stopped: the picture is of one call, its result and what came next.
  waitUntil([&] {
    const ChatController::Chat* c = chats.chat(id);
    if (c->toolCall && !c->toolCall->running) chats.stop(id);
    return !c->replying;
  }, kTurnTimeoutMs);
  const QVector<MessageRecord>& m = chats.chat(id)->record.messages;
  auto* transcript = m_window.findChild<TranscriptView*>(QStringLiteral("transcript"));
  for (int i = 0; i < m.size() && transcript; ++i)
    if (m[i].role == QLatin1String("tool")) {
      transcript->toggleToolResult(i);
      transcript->revealMessage(i - 1, {});  // the call and its result in view
      break;
    }
  if (!shootBoth(QStringLiteral("tool-result"))) return false;
  ToolServersDialog dialog(*servers, &m_window);
  dialog.show();
  waitUntil([] { return false; }, 300);
  const bool ok = save(&dialog, QStringLiteral("tool-servers.png"));
  m_window.resize(1600, 1000);
  return ok;
}
