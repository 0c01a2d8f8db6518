#pragma once
// Lessons a teacher gives with one click each: a lesson sets up its scene on the real engine
// (the teaching preset's small blocks, the pool it needs, its own chats and requests, sent by
// the runner as a user would send them), pauses the engine just before the mechanism it shows,
// and then the class advances step by step or event by event, each KV event told in a sentence
// naming its blocks (appcore/pool/kv_event_text.h). The runner drives the AppSession as the
// window does (its chats, its pool control, a fresh engine through its model load), nothing
// behind its back, and tells the window only what the window owns: the chat to show and the
// pool panel's scene; a lesson is reached when its key event happens (or, for continuous
// batching, its key step).
//
// While the view shows a remote pagedchat-server's pool (View > Watch a remote pool; a teacher's
// server started with --allow-pool-control), a lesson that can be told there is told on that
// pool: the server's pool reset to the lesson's shape, the scene's chats run on the server, the
// class stepping the server. A fork there is a new request (the server's prefix cache shares its
// blocks, nothing is copied on write), and the server's frames carry neither its step records
// nor its context slab, so the fork, contiguous and batching lessons go back to this machine.

#include <QHash>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QVector>

#include <array>
#include <chrono>
#include <functional>
#include <optional>

#include <qcoro/qcorotask.h>

#include "engine/kv/kv_events.h"
#include "appcore/chat/chat_record.h"
#include "appcore/chat/chat_types.h"
#include "appcore/lessons/quantization_study.h"
#include "appcore/pool/pool_frame.h"
#include "appcore/session/app_settings.h"
#include "engine/bench/roofline.h"
#include "engine/engine/engine.h"

class AppSession;

struct LessonInfo {
  // A lesson told by steps rather than by KV events: reached at its key step.
  enum class KeyStep {
    none,               // reached at keyEvent
    mixed,              // a step computes a prompt chunk beside a decode (continuous batching)
    decodeAfterPrompt,  // the first step of decodes only, after a prompt step (prefill against decode)
  };
  // The pool panel's history tab for the scene (KvPoolPanel's tabs, in this order).
  enum class History { events, steps, roofline, quantization };
  QString id;       // "allocation", "contiguous", "fork", "prefix", "parallel", "eviction", "beams", ...
  QString title;
  QString intro;    // what the class is about to see, said before the first step
  pagedchat::KvEventKind keyEvent = pagedchat::KvEventKind::allocate;  // reached when one happens
  QString keyChat;           // ... of this chat only (a title), or of any chat when empty
  KeyStep keyStep = KeyStep::none;
  int poolBlocks = 0;        // the teaching preset's pool for this scene (blocks of 4 tokens)
  int hostBlocks = 0;        // its host (swap) pool; 0: a preemption recomputes
  bool kvDisk = false;       // its engine has a disk tier (in a folder of the lesson's own, emptied first)
  History history = History::events;
  bool measuresRoofline = false;  // the machine's roofline is measured for it (engine/bench/roofline.h)
  // It quantizes the user's model three ways and shows each variant's cost (quantization_study.h);
  // its events are the variants' results, one per Next event.
  bool studiesQuantization = false;
  bool speculates = false;   // its engine drafts by prompt lookup (every other lesson's does not)
  QString kvType;            // its engine's KV element type ("f32", ...); empty: the user's
  // Its engine's block size and context; 0: the teaching preset's (4 and 256).
  int blockSize = 0, context = 0;
  bool slidingWindow = false;  // it needs a model with a sliding window (the user's, else one found here)
  bool keyIsWindowEdge = false;  // reached when a block of the scene's chat first falls wholly before its window
  QString onlyHere;          // why it cannot be told on a remote pool; empty: it can
};

class LessonRunner : public QObject {
  Q_OBJECT
 public:
  // finished: after the key event, every chat of the scene has ended its turn (nothing left to step).
  enum class State { idle, preparing, ready, reached, finished, failed };

  // session outlives the runner.
  explicit LessonRunner(AppSession& session, QObject* parent = nullptr);
  static const QVector<LessonInfo>& lessons();  // the catalogue: lesson_catalog.cpp

  // Sets the lesson's scene up on a freshly loaded engine (the preset and pool it needs, its
  // chats, its turns), then pauses just before its mechanism: stateChanged(ready). Starting
  // again replays it from a fresh scene, block for block.
  void start(const QString& id);
  State state() const { return m_state; }
  bool onRemotePool() const { return m_remote; }  // the lesson running is told on a watched server's pool
  const LessonInfo* current() const { return m_current; }
  // The KV events since the scene was ready, by kind (what the tests assert).
  int eventCount(pagedchat::KvEventKind kind) const { return m_counts[static_cast<size_t>(kind)]; }
  int mixedSteps() const { return m_mixedSteps; }  // steps since ready with a prompt chunk beside a decode
  // The prefill/decode lesson's steps since ready: prompt steps (no decode in them) and decode
  // steps (only decodes), and of those the ones the roofline measured for it calls compute-bound
  // and memory-bound.
  struct StepTally {
    int prompt = 0, promptComputeBound = 0, decode = 0, decodeMemoryBound = 0;
  };
  StepTally stepTally() const { return m_tally; }
  const pagedchat::RooflineCeilings& roofline() const { return m_roofline; }
  // The KV types lesson's runs of the same question, in order (f32, f16, q8_0): each engine's
  // pool (the f32 pool's memory), a block's bytes, and the chat's tokens and blocks as its
  // frames last showed them.
  struct KvTypeRun {
    QString type, chat;
    int poolBlocks = 0;
    qint64 blockBytes = 0;
    std::vector<int32_t> tokens;
    int blocksHeld = 0;
  };
  const QVector<KvTypeRun>& kvTypeRuns() const { return m_kvRuns; }
  QString lastSentence() const { return m_lastSentence; }
  // The quantization lesson's measurement (null before it ends) and how many of its variants
  // the class has been shown (0 at ready, each Next event one more).
  const QuantizationStudy::Result& quantization() const { return m_quantization; }
  int quantizationShown() const { return m_quantizationShown; }
  // The chats the scene made, by the names the lesson gave them ("Chat A", ...).
  ChatId sceneChat(const QString& title) const;
  std::optional<QString> sceneChatTitle(ChatId id) const;
  // The chats a lesson made are the lesson's, not the user's: the next lesson's start deletes
  // the last one's, and so does the next start of the app (call this once the chats are
  // restored) for a scene left when the app quit, whose engine settings are then the user's
  // own again.
  void removeLeftoverScene();
  // A lesson's scene is up on this machine's engine or a watched server's (set up, ready,
  // reached or finished, and not left).
  bool isActive() const;
  // The user goes back to their own chats (one that is not the scene's, or a new one): the
  // lesson ends there. Its chats go, the engine runs again with the user's own settings (the
  // pool, block size and context they had before the lesson, reloaded when the lesson's
  // differ), and the state is idle with a sentence saying so. Nothing while no lesson is up.
  void leave();
  // "Next event" on the pool the lesson is told on: steps until one changes a block, or, in a
  // lesson told by its steps' costs (prefill against decode), one step: each is its event.
  void nextEvent();
  // "Step" (n steps) and "Run to end" on the lesson's pool; in the quantization lesson, the next
  // variant and all of them.
  void step(int n = 1);
  void runToEnd();

 signals:
  void stateChanged(LessonRunner::State state, const QString& message);
  void sentence(const QString& text);  // each event line of the lesson's steps, in order
  void chatShown(ChatId id);  // the scene's newest chat, to show
  // The pool panel's scene: its history tab (LessonInfo::History as an int), its contiguous strip.
  void sceneShown(int historyTab, bool contiguousStrip);
  // The quantization lesson's chart: the measurement and the variants shown so far.
  void quantizationShownChanged(const QuantizationStudy::Result& result, int variantsShown);

 private:
  static constexpr std::chrono::milliseconds kTurnTimeout{180000};  // a scene's turn, a load, a measurement

  QCoro::Task<> run(LessonInfo lesson, int generation);
  // A fresh engine of the lesson's pool, paused; kvType and poolBlocks (when given) instead of the lesson's.
  QCoro::Task<bool> prepare(const LessonInfo& lesson, const QString& kvType = {}, int poolBlocks = 0);
  QCoro::Task<bool> measureRoofline();  // this machine's, for the model just loaded (m_roofline)
  QCoro::Task<bool> studyQuantization(int generation);  // the user's model, three ways (m_quantization)
  void showNextVariant();  // the quantization lesson's event
  QString variantSentence(int variant) const;
  void tellStep(const pagedchat::StepRecord& step, const std::function<QString(pagedchat::SequenceId)>& title, QString& key);
  QCoro::Task<bool> prepareRemote(const LessonInfo& lesson);  // the same on the watched server
  QCoro::Task<bool> remoteRequestsTaken();  // paused there: the server has taken every turn sent
  QCoro::Task<bool> replyFully(const QString& text);    // one turn run to its end, then paused again
  QCoro::Task<bool> stepUntilDecoding();                // paused steps until a chat decodes
  QCoro::Task<bool> stopReplies();  // every turn in flight stopped, for a fresh scene
  QCoro::Task<bool> setScene(const LessonInfo& lesson, int generation);  // the lesson's chats and turns
  // The scenes that wait for replies of their own first.
  QCoro::Task<bool> forkScene(TurnSettings brief, int generation);
  QCoro::Task<bool> prefixScene(TurnSettings brief, int generation);
  QCoro::Task<bool> evictionScene(TurnSettings brief, int generation);
  QCoro::Task<bool> diskScene(TurnSettings brief, int generation);
  QCoro::Task<bool> kvTypesScene(const LessonInfo& lesson, TurnSettings brief, int generation);
  QString userKvType() const;  // the user's KV element type, kept aside while lessons run
  QString userModel() const;   // the user's model, kept aside while lessons run (one may load another)
  // The model a sliding-window lesson runs: the user's when it has a window, else the smallest
  // with one among the models on this machine (the model library's places); empty: none.
  QString slidingWindowModel() const;
  QString windowSentence(const PoolFrame& frame, const QString& line) const;  // its key sentence
  int blocksOutsideWindow(const PoolFrame& frame) const;  // of the scene's chat, in the frame
  // The KV types lesson: blocks of the teaching preset in `type` that the memory of its f32 pool
  // (LessonInfo::poolBlocks blocks) holds.
  int blocksInF32Memory(const LessonInfo& lesson, const QString& type) const;
  qint64 kvBlockBytes(const QString& type) const;  // a teaching block's keys and values, all layers
  QString kvTypesSentence(const QString& line) const;  // the key sentence: the three runs compared
  TurnSettings briefTurns() const;
  bool failedReply(const QString& chat);
  // Submitted; it waits for the class's steps. samples > 1: that many samples, or beams.
  void sendPaused(const QString& text, int samples = 1, bool beams = false);
  void setPaused(bool paused);
  void setState(State state, const QString& message = {});
  void onFrame(const PoolFrame& frame);
  QString keySentence(const PoolFrame& frame, const QString& line) const;

  // The user's teaching preset and its pool before the first lesson's engine (restored when
  // the lesson is left; also saved, for a start after a quit in the middle of a lesson).
  void rememberUserEngine();
  void restoreUserEngine();
  bool isReplying(ChatId id) const;
  int contextUsed(ChatId id) const;
  ChatId newSceneChat(const QString& title, const TurnSettings& sampling);
  void addToScene(const QString& title, ChatId id);  // the chat is the scene's: shown, and the next turn's

  QuantizationStudy* m_study = nullptr;
  QuantizationStudy::Result m_quantization;
  int m_quantizationShown = 0;
  AppSession& m_session;
  ChatId m_sceneCurrent = -1;  // the scene's chat a turn is sent to
  const LessonInfo* m_current = nullptr;
  State m_state = State::idle;
  int m_generation = 0;  // a new start leaves the old run's awaits without effect
  bool m_remote = false;     // told on the watched remote pool
  RemoteEngineChoice m_remoteEngine;  // where the scene's chats run then
  int m_remoteSent = 0, m_remoteTaken = 0;  // the scene's turns sent there, and taken by the server
  struct WatchedPoolState {  // the watched server's last frame, as far as a fresh pool is told by it
    int64_t step = -1;
    int blockSize = 0, numBlocks = 0, numHostBlocks = 0, numFree = 0;
  } m_remotePool;
  QString m_poolRefusal;  // the watched server's last refusal of a pool command, as PoolControl said it
  bool m_counting = false;
  std::array<int, pagedchat::kNumKvEventKinds> m_counts{};
  int m_mixedSteps = 0;
  StepTally m_tally;
  pagedchat::RooflineCeilings m_roofline;
  QVector<KvTypeRun> m_kvRuns;
  int m_windowedBlocks = 0;  // the sliding-window lesson's: its chat's blocks before the window, last frame
  pagedchat::StepRecord m_fullestPromptStep;  // the prefill/decode lesson's largest prompt step, for the key step's comparison
  QString m_lastSentence;
  int m_freeBlocks = 0;        // in the last frame
  bool m_lastStepDecoded = false;  // the last frame's steps computed a decode
  QVector<QPair<QString, ChatId>> m_sceneChats;
  QHash<pagedchat::SequenceId, QString> m_titles;  // every sequence's chat, as frames named it
};
