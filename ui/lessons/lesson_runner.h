#pragma once
// Lessons a teacher gives with one click each: a lesson sets up its scene on the real engine
// (the teaching preset's small blocks, the pool it needs, its own chats and requests, sent by
// the runner as a user would send them), pauses the engine just before the mechanism it shows,
// and then the class advances step by step or event by event, each KV event told in a sentence
// naming its blocks (ui/pool_panel/kv_event_text.h). The runner drives the MainWindow through
// its public slots and actions, nothing behind its back; a lesson is reached when its key
// event happens (or, for continuous batching, its key step).

#include <QHash>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QVector>

#include <array>

#include <qcoro/qcorotask.h>

#include "engine/kv/kv_events.h"
#include "ui/chat/chat_types.h"
#include "ui/pool_view/pool_frame.h"

class MainWindow;

struct LessonInfo {
  QString id;       // "allocation", "contiguous", "fork", "prefix", "parallel", "eviction", ...
  QString title;
  QString intro;    // what the class is about to see, said before the first step
  pagedchat::KvEventKind keyEvent = pagedchat::KvEventKind::allocate;  // reached when one happens
  QString keyChat;           // ... of this chat only (a title), or of any chat when empty
  bool keyIsMixedStep = false;  // instead: a step computes a prompt chunk beside a decode
  int poolBlocks = 0;        // the teaching preset's pool for this scene (blocks of 4 tokens)
  int hostBlocks = 0;        // its host (swap) pool; 0: a preemption recomputes
  bool showsSteps = false;   // the pool panel shows its step timeline rather than its event log
};

class LessonRunner : public QObject {
  Q_OBJECT
 public:
  enum class State { idle, preparing, ready, reached, failed };

  explicit LessonRunner(MainWindow& window);
  static const QVector<LessonInfo>& lessons();

  // Sets the lesson's scene up on a freshly loaded engine (the preset and pool it needs, its
  // chats, its turns), then pauses just before its mechanism: stateChanged(ready). Starting
  // again replays it from a fresh scene, block for block.
  void start(const QString& id);
  State state() const { return m_state; }
  const LessonInfo* current() const { return m_current; }
  // The KV events since the scene was ready, by kind (what the tests assert).
  int eventCount(pagedchat::KvEventKind kind) const { return m_counts[static_cast<size_t>(kind)]; }
  int mixedSteps() const { return m_mixedSteps; }  // steps since ready with a prompt chunk beside a decode
  QString lastSentence() const { return m_lastSentence; }
  // The chats the scene made, by the names the lesson gave them ("Chat A", ...).
  ChatId sceneChat(const QString& title) const;

 signals:
  void stateChanged(LessonRunner::State state, const QString& message);
  void sentence(const QString& text);  // each event line of the lesson's steps, in order

 private:
  QCoro::Task<> run(LessonInfo lesson, int generation);
  QCoro::Task<bool> prepare(const LessonInfo& lesson);  // a fresh engine of the lesson's pool, paused
  QCoro::Task<bool> replyFully(const QString& text);    // one turn run to its end, then paused again
  QCoro::Task<bool> stepUntilDecoding();                // paused steps until a chat decodes
  void sendPaused(const QString& text, int samples = 1);  // submitted; it waits for the class's steps
  void setPaused(bool paused);
  void setState(State state, const QString& message = {});
  void onFrame(const PoolFrame& frame);
  QString keySentence(const PoolFrame& frame, const QString& line) const;

  MainWindow& m_window;
  const LessonInfo* m_current = nullptr;
  State m_state = State::idle;
  int m_generation = 0;  // a new start leaves the old run's awaits without effect
  bool m_counting = false;
  std::array<int, pagedchat::kNumKvEventKinds> m_counts{};
  int m_mixedSteps = 0;
  QString m_lastSentence;
  int m_freeBlocks = 0;        // in the last frame
  bool m_lastStepDecoded = false;  // the last frame's steps computed a decode
  QVector<QPair<QString, ChatId>> m_sceneChats;
  QHash<pagedchat::SequenceId, QString> m_titles;  // every sequence's chat, as frames named it
};
