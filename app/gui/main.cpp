// pagedchat: the desktop app. Opens the main window on the model given by --model, or the
// default model, or the welcome page on a first run; chats are restored from the app's data folder.

#include <QApplication>
#include <QCommandLineParser>

#include <algorithm>

#include "ui/shell/app_services.h"
#include "ui/shell/main_window.h"
#include "ui/shell/screenshot_tour.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("PagedChat"));
  QApplication::setOrganizationName(QStringLiteral("PagedChat"));

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("Chat with local language models on a paged-KV engine."));
  parser.addHelpOption();
  QCommandLineOption modelOpt(QStringLiteral("model"), QStringLiteral("GGUF model to open."), QStringLiteral("path"));
  QCommandLineOption threadsOpt(QStringLiteral("threads"),
                                QStringLiteral("CPU threads (0 = all; default: the Settings dialog's value)."), QStringLiteral("n"));
  QCommandLineOption screenshotsOpt(QStringLiteral("screenshots"),
                                    QStringLiteral("Run the scripted tour (two chats, a fork, a compare round), save "
                                                   "screenshots into this folder and quit (installer/screenshots.sh)."),
                                    QStringLiteral("dir"));
  parser.addOption(modelOpt);
  parser.addOption(threadsOpt);
  parser.addOption(screenshotsOpt);
  parser.process(app);

  AppServices services;  // the database, the engine thread and the local API: outlive the window
  MainWindow window(services);
  window.show();
  if (parser.isSet(screenshotsOpt)) new ScreenshotTour(window, parser.value(screenshotsOpt));  // owned by the window
  // A first run (no --model, the default model not fetched yet) opens on the welcome page.
  window.openAtStart(parser.value(modelOpt), parser.isSet(threadsOpt) ? std::max(0, parser.value(threadsOpt).toInt()) : -1);
  return app.exec();
}
