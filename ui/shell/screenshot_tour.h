#pragma once
// A scripted tour of the app for screenshots (installer/screenshots.sh runs it under Xvfb): two
// chats generating at once, a fork of the first, a compare round of 3 samples; it saves the
// main window, the compare view and the KV block-pool panel as PNGs, then the window in the
// light and the dark theme at 1024x700, 1366x768 and 1600x1000 on a chat of code, thinking and
// math, on a message longer than the context, and (a base model) on its first reply, a tool
// call and its result (an MCP server in mcp.json), and each lesson at its key event
// (lesson-<id>.png), and quits the app. It
// drives the window as a user would (its slots and widgets) on the real engine. A window that
// starts on the welcome page (a first run) is shot instead as welcome.png and model_library.png.

#include <QObject>
#include <QString>

class MainWindow;

class ScreenshotTour : public QObject {
  Q_OBJECT
 public:
  // Starts when the window's model is ready; create it before MainWindow::loadModel.
  ScreenshotTour(MainWindow& window, QString outDir);

 private:
  static constexpr int kTurnTimeoutMs = 180000;  // a reply of the default model on a slow 2-core machine
  void run();
  void runWelcome();
  bool shootThemes();   // false: it failed and finished the tour
  bool shootEverySize(const QString& stem);
  bool shootNewUserCases();
  bool shootLessons();  // lesson-<id>.png, each at its key event
  bool shootTools();    // tool-call-*.png, tool-result-*.png, tool-servers.png (screenshot_tour_tools.cpp)
  bool send(const QString& text);  // sends into the current chat, returns at once
  bool waitForTurns(int count);    // false when the replies take longer than the time allowed
  bool save(QWidget* widget, const QString& name);
  void finish(int code, const QString& message);

  MainWindow& m_window;
  QString m_outDir;
  int m_turnsDone = 0;
};
