#pragma once
// Driving a MainWindow as a user would, for the ui suites: load a model and wait until the
// window is ready; type a message, send it with Ctrl+Enter and wait for the turn to end.
// QVERIFY inside: a failure ends the calling test (check QTest::currentTestFailed()).

#include <QtTest>

#include <QPlainTextEdit>
#include <QPushButton>
#include <QStandardPaths>

#include <functional>

#include "appcore/chat/chat_database.h"
#include "appcore/session/app_services.h"
#include "ui/shell/main_window.h"

namespace pagedchat::test {

// A UI suite's start: its chats go to a throwaway data folder (QStandardPaths' test mode), with
// none left from an earlier run (the write-ahead log included: a new file would read it).
inline void useFreshDataFolder() {
  QStandardPaths::setTestModeEnabled(true);
  for (const char* suffix : {"", "-wal", "-shm"}) QFile::remove(ChatDatabase::defaultPath() + QLatin1String(suffix));
}

// Waits until `done` (true) or `ms` pass, events processed in slices of 100 ms. For long waits
// while another thread posts all along (a lesson quantizing a model): Qt 6.4's QTRY macros hand
// processEvents the whole timeout, which then keeps processing the stream and checks `done`
// only when the timeout is spent.
inline bool waitUntil(const std::function<bool()>& done, int ms) {
  QElapsedTimer clock;
  clock.start();
  while (!done() && clock.elapsed() < ms) QCoreApplication::processEvents(QEventLoop::AllEvents, 100);
  return done();
}

inline void loadAndWait(MainWindow& w, const QString& model) {
  QSignalSpy ready(&w, &MainWindow::modelReady);
  w.loadModel(model, 2);
  QVERIFY(ready.wait(60000));
}

inline void sendAndWait(MainWindow& w, const QString& text) {
  QSignalSpy done(&w, &MainWindow::turnDone);
  auto* input = w.findChild<QPlainTextEdit*>(QStringLiteral("input"));
  input->setPlainText(text);
  QTest::keyClick(input, Qt::Key_Return, Qt::ControlModifier);  // Ctrl+Enter sends
  QVERIFY(input->toPlainText().isEmpty());
  QVERIFY(done.wait(120000));
}

// A lesson's Run to end (the lessons panel's button), then no chat of the window replying.
inline void runLessonToEnd(MainWindow& w) {
  w.findChild<QPushButton*>(QStringLiteral("lessonRunToEnd"))->click();
  QTRY_VERIFY_WITH_TIMEOUT(
      [&] {
        for (ChatId id : w.chatIds())
          if (w.isReplying(id)) return false;
        return true;
      }(),
      240000);
}

}  // namespace pagedchat::test
