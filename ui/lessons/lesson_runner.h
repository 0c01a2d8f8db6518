#pragma once
// Lessons a teacher gives with one click each: a lesson sets up its scene on the real engine
// (the teaching preset's small blocks, its own chats and requests, sent by the runner as a user
// would send them), pauses the engine just before the mechanism it shows, and then the class
// advances step by step or event by event, each KV event told in a sentence naming its blocks
// (ui/pool_panel/kv_event_text.h). The runner drives the MainWindow through its public slots
// and actions, nothing behind its back; a lesson is reached when its key event happens.

#include <QObject>
#include <QPointer>
#include <QString>
#include <QVector>

#include <array>

#include <qcoro/qcorotask.h>

#include "engine/kv/kv_events.h"
#include "ui/pool_view/pool_frame.h"

class MainWindow;

struct LessonInfo {
  QString id;       // "allocation", "fork", "prefix"
  QString title;
  QString intro;    // what the class is about to see, said before the first step
  pagedchat::KvEventKind keyEvent;  // the lesson is reached when one happens
};

class LessonRunner : public QObject {
  Q_OBJECT
 public:
  enum class State { idle, preparing, ready, reached, failed };

  explicit LessonRunner(MainWindow& window);
  static const QVector<LessonInfo>& lessons();

  // Sets the lesson's scene up (the preset, its chats, its turns), then pauses just before its
  // mechanism: stateChanged(ready). Starting again replays it from a fresh scene.
  void start(const QString& id);
  State state() const { return m_state; }
  const LessonInfo* current() const { return m_current; }
  // The KV events since the scene was ready, by kind (what the tests assert).
  int eventCount(pagedchat::KvEventKind kind) const { return m_counts[static_cast<size_t>(kind)]; }
  QString lastSentence() const { return m_lastSentence; }

 signals:
  void stateChanged(LessonRunner::State state, const QString& message);
  void sentence(const QString& text);  // each event line of the lesson's steps, in order

 private:
  QCoro::Task<> run(LessonInfo lesson, int generation);
  QCoro::Task<bool> prepare();              // the teaching preset's engine, paused
  QCoro::Task<bool> replyFully(const QString& text);  // one turn run to its end, then paused again
  void sendPaused(const QString& text);     // submitted; it waits for the class's steps
  void setPaused(bool paused);
  void setState(State state, const QString& message = {});
  void onFrame(const PoolFrame& frame);

  MainWindow& m_window;
  const LessonInfo* m_current = nullptr;
  State m_state = State::idle;
  int m_generation = 0;  // a new start leaves the old run's awaits without effect
  bool m_counting = false;
  std::array<int, pagedchat::kNumKvEventKinds> m_counts{};
  QString m_lastSentence;
};
