#pragma once
// The one bridge between the widgets and the engine, for many chats on one Engine (one KV
// pool). It lives on its own QThread, the engine thread: every slot runs there (callers use
// queued calls), so its state needs no lock. Each chat keeps its own parked sequence between
// turns and streams its reply while the others stream theirs: the engine batches them into
// one forward pass per step. The step loop is a queued call to itself after each step while
// the engine has work, so the thread never busy-waits when idle and stays responsive (stop,
// fork, pause) between steps. Text is coalesced to ~30 Hz per reply, and so are pool frames
// (plus one when the work ends). Step mode: setPaused(true), then stepOnce() runs exactly one
// Engine::step and says what it did.
//
// The local API server (when built, PAGEDCHAT_HAVE_SERVER) submits through the bridge's
// RequestRouter: its requests run on this same Engine, batch with the chats, use the prefix
// cache the chats filled, and show in the pool frames as "API request N".

#include <QElapsedTimer>
#include <QObject>
#include <QString>

#include <atomic>
#include <memory>
#include <random>
#include <unordered_map>
#include <vector>

#include "engine/chat/chat_template.h"
#include "engine/engine/engine.h"
#include "ui/chat_types.h"
#include "ui/pool_frame.h"
#include "ui/pool_frame_builder.h"
#include "ui/reply_metrics.h"

class RequestRouter;

class EngineBridge : public QObject {
  Q_OBJECT
 public:
  struct Config {
    int maxContext = 2048;  // tokens one chat may hold
    int numBlocks = 0;      // KV pool in blocks; 0: from kvBytes
    qint64 kvBytes = 0;     // KV pool memory budget; 0 (and numBlocks 0): room for kChatsInPool chats
    int blockSize = 16;
    int maxBatchedTokens = 512;  // tokens per engine step (chunked prefill beyond it)
    int threads = 0;             // CPU threads of the forward pass; 0: all cores
    QString backend = QStringLiteral("cpu");  // "cuda" when built with it and a GPU is there
  };
  static constexpr int kChatsInPool = 4;

  explicit EngineBridge(QObject* parent = nullptr);
  ~EngineBridge() override;

  // Any thread. prepareLoad() before queuing a loadModel; cancelLoad() while it runs makes it
  // stop at its next progress report (modelLoadCancelled; the model in use stays).
  void prepareLoad() { m_cancelLoad.store(false); }
  static bool cudaAvailable();  // built with the CUDA backend, and a GPU is there
  void cancelLoad() { m_cancelLoad.store(true); }

#ifdef PAGEDCHAT_HAVE_SERVER
  // Any thread: the router the API server submits through (attached while a model is loaded).
  std::shared_ptr<RequestRouter> apiRouter() const { return m_api; }
#endif
  // Engine thread only, read-only: the engine's counters (zero before a model is loaded).
  pagedchat::EngineStats engineStats() const;
  bool isPaused() const { return m_paused; }

 public slots:
  // Builds the model, backend and engine from config aside; only when all of it loaded does
  // it replace what runs (the chats' sequences then start afresh).
  void loadModel(const QString& path, const Config& config);
  // The engine goes (the app closes, or another model replaces it): API requests in flight
  // fail with `why`, and every chat's sequences are forgotten.
  void unload(const QString& why);
  // A turn: messages is the whole chat, ending with the user's message. Only what it adds to
  // the chat's parked sequence is computed when it extends what that sequence holds.
  void submit(ChatId chat, const ChatMessages& messages, const TurnSettings& settings);
  void stop(ChatId chat);  // the turn in flight ends ("abort") at the next step
  // Copy-on-write fork of the parent's parked sequence (no recompute): the child chat holds
  // the same messages and shares every block. When the parent holds no parked sequence (never
  // replied, stopped, reclaimed, or generating), the child gets none and its first turn is
  // prompted whole, the prefix cache serving the full blocks. forkDone says which happened.
  void fork(ChatId parent, ChatId child);
  void release(ChatId chat);  // the chat is gone: its sequences are freed
  // Compare: after a turn of n samples, the chat continues with sample `index`; the other
  // samples' sequences are freed.
  void pickSample(ChatId chat, int index);
  void setChatTitle(ChatId chat, const QString& title);
  void setPaused(bool paused);
  void stepOnce();

 signals:
  void modelLoaded(const QString& description, int contextLength);
  void modelFailed(const QString& error);
  void modelLoadCancelled();
  void loadProgress(const QString& stage, double fraction);  // ~20 Hz while loading
  void replyText(ChatId chat, int sample, const QString& text);  // coalesced, ~30 Hz
  void replyFinished(ChatId chat, int sample, const ReplyMetrics& metrics);
  void replyFailed(ChatId chat, const QString& error);
  void turnDone(ChatId chat, int contextUsed);  // every sample ended; tokens the chat now holds
  void forkDone(ChatId child, bool sharesBlocks);
  void poolFrame(const PoolFrame& frame);

 private:
  struct Sample {
    pagedchat::SequenceId seq = -1;
    std::vector<int32_t> tokens;  // sampled ids
    std::string text;             // the reply so far
    QString unsentText;           // not yet emitted (coalescing)
    bool finished = false, parked = false, reported = false;
    double firstTokenAt = -1, lastTokenAt = 0;
    std::string reason;
  };
  struct Turn {
    pagedchat::RequestId request = -1;
    std::vector<pagedchat::ChatMessage> messages;  // the chat this turn answers
    std::vector<int32_t> promptTokens;              // what the sequence holds before the reply
    int64_t numPromptTokens = 0;                    // tokens submitted (appended or whole)
    int64_t numCacheHitBlocks = 0;
    std::vector<Sample> samples;
    QElapsedTimer clock;
    std::string error;
    bool sawToken = false;
  };
  struct ChatState {
    QString title;
    // The parked sequence (-1: none), the messages it holds (the last one the reply as it was
    // generated) and its tokens (the last sampled one included, which the engine stores only
    // when the next turn appends it).
    pagedchat::SequenceId parkedSeq = -1;
    std::vector<pagedchat::ChatMessage> heldMessages;
    std::vector<int32_t> heldTokens;
    std::unique_ptr<Turn> turn;         // in flight
    std::unique_ptr<Turn> unpicked;     // a finished compare turn awaiting pickSample
  };
  struct Loaded;

  pagedchat::SamplingParams samplingParams(const TurnSettings& settings);  // a seed of 0 draws one
  std::vector<int32_t> turnPrompt(ChatState& c, const std::vector<pagedchat::ChatMessage>& chat,
                                  pagedchat::SequenceId& continueSeq);
  void forgetHeld(ChatState& c);
  void releaseUnpicked(ChatState& c, int keep);
  void wake();
  void pump();
  void runStep();
  void onEvent(const pagedchat::EngineEvent& e);
  void deliver(bool flushAll);
  void endTurn(ChatId id, ChatState& c);
  void emitFrame(const QString& stepSummary);
  ChatState* chatOfRequest(pagedchat::RequestId request);

  std::unique_ptr<Loaded> m_loaded;
  std::unordered_map<ChatId, ChatState> m_chats;
  std::unordered_map<pagedchat::RequestId, ChatId> m_requestChat;
  std::unordered_map<pagedchat::SequenceId, ChatId> m_pendingForks;  // child seq -> child chat
  std::vector<std::pair<ChatId, bool>> m_forksDone;
  PoolFrameBuilder m_frames;
  QElapsedTimer m_textClock, m_frameClock;
  bool m_pumpQueued = false;
  std::atomic<bool> m_cancelLoad{false};
  bool m_paused = false;
  int m_stepSampled = 0;  // token events of the step in progress (step summary)
  std::random_device m_seeds;
#ifdef PAGEDCHAT_HAVE_SERVER
  std::shared_ptr<RequestRouter> m_api;
  std::unordered_map<pagedchat::SequenceId, pagedchat::RequestId> m_apiSequences;  // pool frame labels
#endif
};
