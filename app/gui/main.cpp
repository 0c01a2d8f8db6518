// pagedchat: the desktop app. Opens the main window on the model given by --model, or the
// default model, or the welcome page on a first run; chats are restored from the app's data
// folder, which one app holds at a time (a second start shows the first one's window). SIGTERM
// or SIGINT closes it as the window's close does, after its local API's requests in flight
// finish (up to 5 s; their streams end with [DONE] either way); a second one quits at once.

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QMessageBox>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string_view>
#include <utility>

#include "app/common/termination_signals.h"
#include "appcore/session/app_services.h"
#ifdef PAGEDCHAT_HAVE_SERVER
#include "appcore/bridge/local_api_server.h"
#endif
#include "ui/shell/main_window.h"
#include "ui/shell/screenshot_tour.h"

namespace {

// Another app holds the chats: it shows its window and this start goes, saying so on stderr;
// when it does not answer, a box says why no window opens (a start from a menu has no stderr).
int leaveTheChatsToTheOther(const InstanceLock::Held& held) {
  const QString folder = QDir::toNativeSeparators(held.folder);
  if (held.raisedOther) {
    std::fprintf(stderr, "PagedChat is already running on the chats in %s: its window was brought to the front.\n",
                 qPrintable(folder));
    return 0;
  }
  const QString text = QApplication::translate("main", "Another PagedChat holds the chats in %1 and does not answer. "
                                                       "Close it, then start PagedChat again.").arg(folder);
  std::fprintf(stderr, "%s\n", qPrintable(text));
  QMessageBox::warning(nullptr, QStringLiteral("PagedChat"), text);
  return 1;
}

const QCommandLineOption kModelOpt(QStringLiteral("model"), QStringLiteral("GGUF model to open."), QStringLiteral("path"));
const QCommandLineOption kThreadsOpt(QStringLiteral("threads"),
                                     QStringLiteral("CPU threads (0 = all; default: the Settings dialog's value)."), QStringLiteral("n"));
const QCommandLineOption kScreenshotsOpt(QStringLiteral("screenshots"),
                                         QStringLiteral("Run the scripted tour (two chats, a fork, a compare round), save "
                                                        "screenshots into this folder and quit (installer/screenshots.sh)."),
                                         QStringLiteral("dir"));

void declareOptions(QCommandLineParser& parser) {
  parser.setApplicationDescription(QStringLiteral("Chat with local language models on a paged-KV engine."));
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addOptions({kModelOpt, kThreadsOpt, kScreenshotsOpt});
}

void nameTheApp() {
  QCoreApplication::setApplicationName(QStringLiteral("PagedChat"));
  QCoreApplication::setOrganizationName(QStringLiteral("PagedChat"));
  QCoreApplication::setApplicationVersion(QStringLiteral(PAGEDCHAT_VERSION));
}

// --help and --version print and exit with no display to open (a terminal over ssh, a script).
bool onlyAsksForText(int argc, char** argv) {
  return std::any_of(argv + 1, argv + argc, [](const char* a) {
    const std::string_view arg(a);
    return arg == "--help" || arg == "-h" || arg == "--help-all" || arg == "-?" || arg == "--version" || arg == "-v";
  });
}

}  // namespace

int main(int argc, char** argv) {
  if (onlyAsksForText(argc, argv)) {
    QCoreApplication core(argc, argv);
    nameTheApp();
    QCommandLineParser parser;
    declareOptions(parser);
    parser.process(core);  // prints, and exits
    return 0;
  }
  QApplication app(argc, argv);
  nameTheApp();
  QCommandLineParser parser;
  declareOptions(parser);
  parser.process(app);
  const QCommandLineOption& modelOpt = kModelOpt;
  const QCommandLineOption& threadsOpt = kThreadsOpt;
  const QCommandLineOption& screenshotsOpt = kScreenshotsOpt;

  // The database, the engine thread and the local API: outlive the window.
  std::unique_ptr<AppServices> services;
  try {
    services = std::make_unique<AppServices>();
  } catch (const InstanceLock::Held& held) {
    return leaveTheChatsToTheOther(held);
  }
  MainWindow window(*services);
  window.show();
  if (parser.isSet(screenshotsOpt)) new ScreenshotTour(window, parser.value(screenshotsOpt));  // owned by the window
  // A first run (no --model, the default model not fetched yet) opens on the welcome page.
  window.openAtStart(parser.value(modelOpt), parser.isSet(threadsOpt) ? std::max(0, parser.value(threadsOpt).toInt()) : -1);
  TerminationSignals termination;
  bool ending = false;
  QObject::connect(&termination, &TerminationSignals::requested, &window, [&](int) {
    const auto close = [&window] {
      window.close();  // saves the drafts and the layout, as a click on the close box does
      QApplication::quit();
    };
    if (std::exchange(ending, true)) return close();
#ifdef PAGEDCHAT_HAVE_SERVER
    if (LocalApiServer* api = services->apiServer()) return api->shutdown(5000, close);
#endif
    close();
  });
  return app.exec();
}
