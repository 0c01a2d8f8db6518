#include "ui/shell/screenshot_tour.h"

#include <QApplication>
#include <QDockWidget>
#include <QPushButton>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QPixmap>
#include <QPlainTextEdit>
#include <QSpinBox>
#include <QStringList>
#include <QTimer>

#include <cstdio>
#include <functional>

#include "appcore/chat/chat_export.h"
#include "ui/chat/chat_panel.h"
#include "ui/chat/compare_view.h"
#include "ui/library/model_library_dialog.h"
#include "ui/library/model_list_widget.h"
#include "appcore/lessons/lesson_runner.h"
#include "ui/library/welcome_view.h"
#include "ui/pool_panel/kv_pool_panel.h"
#include "ui/pool_view/kv_pool_view.h"
#include "ui/shell/main_window.h"
#include "ui/dialogs/settings_dialog.h"

namespace {
constexpr int kLessonTimeoutMs = 120000;  // Next event pressed until the key event
}  // namespace

ScreenshotTour::ScreenshotTour(MainWindow& window, QString outDir) : QObject(&window), m_window(window), m_outDir(std::move(outDir)) {
  connect(&m_window, &MainWindow::turnDone, this, [this] { ++m_turnsDone; });
  connect(&m_window, &MainWindow::modelReady, this, [this] { QTimer::singleShot(0, this, &ScreenshotTour::run); },
          Qt::SingleShotConnection);
  // main() calls openAtStart after this; the first turn of the event loop knows the page.
  QTimer::singleShot(0, this, [this] {
    if (m_window.welcomeShown()) runWelcome();
  });
}

void ScreenshotTour::runWelcome() {
  if (!QDir().mkpath(m_outDir)) return finish(1, QStringLiteral("cannot create %1").arg(m_outDir));
  m_window.resize(1366, 768);
  auto waitScanned = [](ModelListWidget* list) {
    QElapsedTimer clock;
    clock.start();
    while (list && list->isScanning() && clock.elapsed() < 20000) QApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);
    QApplication::processEvents();
  };
  waitScanned(m_window.welcomeView()->modelList());
  if (!save(&m_window, QStringLiteral("welcome.png"))) return finish(1, {});
  m_window.showModelLibrary();
  ModelLibraryDialog* library = m_window.modelLibrary();
  waitScanned(library->modelList());
  library->modelList()->setCurrentItem(library->modelList()->topLevelItem(0));
  QApplication::processEvents();
  if (!save(library, QStringLiteral("model_library.png"))) return finish(1, {});
  finish(0, {});
}

bool ScreenshotTour::send(const QString& text) {
  auto* input = m_window.findChild<QPlainTextEdit*>(QStringLiteral("input"));
  if (!input) return false;
  input->setPlainText(text);
  m_window.chatPanel()->send();
  return input->toPlainText().isEmpty();
}

bool ScreenshotTour::waitForTurns(int count) {
  // A nested event loop keeps the script reading top to bottom; the engine runs on its thread.
  QElapsedTimer clock;
  clock.start();
  while (m_turnsDone < count && clock.elapsed() < kTurnTimeoutMs) QApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);
  QApplication::processEvents();  // the last frame and metrics
  return m_turnsDone >= count;
}

bool ScreenshotTour::save(QWidget* widget, const QString& name) {
  const QString path = QDir(m_outDir).filePath(name);
  const bool ok = widget && widget->grab().save(path);
  std::printf("%s %s\n", ok ? "saved" : "could not save", qPrintable(path));
  return ok;
}

void ScreenshotTour::finish(int code, const QString& message) {
  if (!message.isEmpty()) std::fprintf(stderr, "screenshot tour: %s\n", qPrintable(message));
  QApplication::exit(code);
}

void ScreenshotTour::run() {
  if (!QDir().mkpath(m_outDir)) return finish(1, QStringLiteral("cannot create %1").arg(m_outDir));
  m_window.resize(1600, 1000);

  // Two chats generating at the same time.
  const ChatId first = m_window.newChat();
  if (!send(QStringLiteral("Explain in two sentences what a KV cache is."))) return finish(1, QStringLiteral("send failed"));
  m_window.newChat();
  if (!send(QStringLiteral("Write a haiku about memory."))) return finish(1, QStringLiteral("send failed"));
  if (!waitForTurns(2)) return finish(1, QStringLiteral("the first two replies did not finish in time"));

  // A fork of the first chat at its latest message, continued with its own question.
  m_window.forkChat(first, static_cast<int>(m_window.chat(first)->messages.size()));
  if (!send(QStringLiteral("Now say it in one word."))) return finish(1, QStringLiteral("send in the fork failed"));
  if (!waitForTurns(3)) return finish(1, QStringLiteral("the fork's reply did not finish in time"));
  if (!save(&m_window, QStringLiteral("main.png"))) return finish(1, {});
  if (!save(m_window.findChild<KvPoolPanel*>(QStringLiteral("kvPoolPanel")), QStringLiteral("kv_pool.png")))
    return finish(1, {});
  {
    SettingsDialog settings(m_window.settings(), EngineBridge::cudaAvailable(), &m_window);
    settings.adjustSize();
    if (!save(&settings, QStringLiteral("settings.png"))) return finish(1, {});
  }

  // A compare round: one prompt, three samples side by side.
  m_window.newChat();
  if (auto* samples = m_window.findChild<QSpinBox*>(QStringLiteral("samples"))) samples->setValue(3);
  if (!send(QStringLiteral("Name a colour and say why you like it."))) return finish(1, QStringLiteral("compare send failed"));
  if (!waitForTurns(4)) return finish(1, QStringLiteral("the compare round did not finish in time"));
  if (!save(&m_window, QStringLiteral("compare.png"))) return finish(1, {});
  if (!save(m_window.findChild<CompareView*>(QStringLiteral("compareView")), QStringLiteral("compare_view.png")))
    return finish(1, {});

  // A model with a sliding window (Gemma 3): one chat that outgrows it, so that the pool view
  // shows the blocks its local layers no longer read.
  auto* panel = m_window.findChild<KvPoolPanel*>(QStringLiteral("kvPoolPanel"));
  const PoolFrame* frame = panel ? panel->poolView()->frame() : nullptr;
  if (frame && frame->slidingWindow.window > 0) {
    m_window.newChat();
    if (auto* samples = m_window.findChild<QSpinBox*>(QStringLiteral("samples"))) samples->setValue(1);
    QStringList days;
    for (int i = 1; days.join(QLatin1Char(' ')).size() < 6 * frame->slidingWindow.window; ++i)
      days << QStringLiteral("On day %1 the baker rose early, lit the oven and sold bread to the village.").arg(i);
    if (!send(QStringLiteral("Summarize this story in one sentence. ") + days.join(QLatin1Char(' '))))
      return finish(1, QStringLiteral("the long send failed"));
    if (!waitForTurns(5)) return finish(1, QStringLiteral("the long reply did not finish in time"));
    panel->flush();
    if (!save(panel, QStringLiteral("kv_pool_sliding_window.png"))) return finish(1, {});
  }
  if (!shootThemes()) return;
  if (!shootNewUserCases()) return;
  if (!shootTools()) return finish(1, QStringLiteral("a tools picture could not be saved"));
  if (!shootLessons()) return;
  finish(0, {});
}

// Each lesson run as a class would, to its key event, at 1366x768: lesson-<id>.png shows the
// event in the pool view and its sentence in the Lessons tab.
bool ScreenshotTour::shootLessons() {
  m_window.resize(1366, 768);
  LessonRunner* runner = m_window.lessons();
  auto* dock = m_window.findChild<QDockWidget*>(QStringLiteral("lessonsDock"));
  if (!runner || !dock) {
    finish(1, QStringLiteral("no lessons"));
    return false;
  }
  dock->raise();
  auto waitFor = [](const std::function<bool()>& done, int ms) {
    QElapsedTimer clock;
    clock.start();
    while (!done() && clock.elapsed() < ms) QApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);
    return done();
  };
  using State = LessonRunner::State;
  for (const LessonInfo& lesson : LessonRunner::lessons()) {
    runner->start(lesson.id);
    if (!waitFor([&] { return runner->state() == State::ready || runner->state() == State::failed; }, kTurnTimeoutMs) ||
        runner->state() != State::ready) {
      finish(1, QStringLiteral("the lesson %1 did not set up").arg(lesson.id));
      return false;
    }
    // Eviction and preemption take ~100 presses; a lesson that has not reached its key event in
    // two minutes will not (the fork lesson on a model whose replies never end by themselves).
    QElapsedTimer pressing;
    pressing.start();
    for (int press = 0; press < 300 && runner->state() != State::reached && pressing.elapsed() < kLessonTimeoutMs; ++press) {
      const QString before = runner->lastSentence();
      m_window.findChild<QPushButton*>(QStringLiteral("lessonNextEvent"))->click();  // as the class presses it
      waitFor([&] { return runner->lastSentence() != before || runner->state() == State::reached; }, 5000);
    }
    if (runner->state() != State::reached) {
      finish(1, QStringLiteral("the lesson %1 did not reach its key event (its last sentence: %2)").arg(lesson.id, runner->lastSentence()));
      return false;
    }
    waitFor([] { return false; }, 200);  // the last frame drawn
    if (!save(&m_window, QStringLiteral("lesson-%1.png").arg(lesson.id))) {
      finish(1, {});
      return false;
    }
  }
  return true;
}

// A chat with the replies people read most (code, thinking, math), imported as a user would
// import an export, shown in the light and the dark theme at a small laptop's size and a large
// screen's: window-light-1024x700.png, window-dark-1600x1000.png, ...
bool ScreenshotTour::shootThemes() {
  ChatRecord rich;
  rich.title = QStringLiteral("Rendering: code, thinking, math");
  rich.messages.append({.role = QStringLiteral("user"), .content = QStringLiteral("How do I sum the squares 1..n in Python, and what is the closed form?")});
  rich.messages.append(
      {.role = QStringLiteral("assistant"),
       .content = QStringLiteral(
           "<think>The user wants code and the formula. The sum of squares is n(n+1)(2n+1)/6; show a loop and the "
           "formula, then check n = 3: 1 + 4 + 9 = 14.</think>\n\n"
           "A loop, and the closed form $\\sum_{k=1}^{n} k^2$:\n\n"
           "```python\ndef sum_of_squares(n: int) -> int:\n    \"\"\"1^2 + 2^2 + ... + n^2\"\"\"\n"
           "    total = 0  # running sum\n    for k in range(1, n + 1):\n        total += k * k\n    return total\n\n"
           "assert sum_of_squares(3) == 14 and sum_of_squares(10) == 385, \"the closed form disagrees with this loop for some n\"\n```\n\n"
           "$$\\sum_{k=1}^{n} k^2 = \\frac{n(n+1)(2n+1)}{6}$$\n\n"
           "For $n = 3$: $\\frac{3 \\cdot 4 \\cdot 7}{6} = 14$.")});
  rich.messages.last().metrics.numTokens = 161;
  rich.messages.last().metrics.tokensPerSecond = 48.2;
  rich.messages.last().metrics.secondsToFirstToken = 0.085;
  rich.messages.last().metrics.finishReason = QStringLiteral("stop");
  const QString path = QDir(m_outDir).filePath(QStringLiteral("rendering-chat.json"));
  QFile file(path);
  if (!file.open(QIODevice::WriteOnly) || file.write(chatToJson(rich, QString(), m_window.settings().sampling)) < 0) {
    finish(1, QStringLiteral("cannot write %1").arg(path));
    return false;
  }
  file.close();
  const ChatId id = m_window.importChat(path);
  QFile::remove(path);
  if (id < 0) {
    finish(1, QStringLiteral("the rendering chat did not import"));
    return false;
  }
  m_window.selectChat(id);
  return shootEverySize(QStringLiteral("window"));
}

// The window as it is, in both themes at a small laptop's size, a common one and a large
// screen's: <stem>-light-1024x700.png ... <stem>-dark-1600x1000.png.
bool ScreenshotTour::shootEverySize(const QString& stem) {
  for (const ThemeChoice theme : {ThemeChoice::light, ThemeChoice::dark}) {
    m_window.setTheme(theme);
    for (const QSize size : {QSize(1024, 700), QSize(1366, 768), QSize(1600, 1000)}) {
      m_window.resize(size);
      QElapsedTimer settle;
      settle.start();
      while (settle.elapsed() < 300) QApplication::processEvents(QEventLoop::AllEvents, 50);
      const QString name = QStringLiteral("%1-%2-%3x%4.png").arg(stem, themeChoiceName(theme)).arg(size.width()).arg(size.height());
      if (!save(&m_window, name)) {
        finish(1, {});
        return false;
      }
    }
  }
  m_window.setTheme(ThemeChoice::system);
  m_window.resize(1600, 1000);
  return true;
}

// What a new user meets: a message longer than the whole context, refused with its reason
// (overlong-message-*.png); and with a base model, its first reply continuing the text typed
// (base-model-reply-*.png).
bool ScreenshotTour::shootNewUserCases() {
  m_window.newChat();
  QString longText = QStringLiteral("Please summarise these notes: ");
  while (longText.size() < 12 * m_window.session().contextLength()) longText += QStringLiteral("river stone, ");
  const int before = m_turnsDone;
  if (!send(longText) || !waitForTurns(before + 1)) {
    finish(1, QStringLiteral("the over-long message was not answered"));
    return false;
  }
  if (!shootEverySize(QStringLiteral("overlong-message"))) return false;
  if (!m_window.modelInfo().baseModel) return true;
  m_window.newChat();
  if (!send(QStringLiteral("The lighthouse keeper climbed the stairs every evening, and")) || !waitForTurns(before + 2)) {
    finish(1, QStringLiteral("the base model's reply did not finish in time"));
    return false;
  }
  return shootEverySize(QStringLiteral("base-model-reply"));
}
