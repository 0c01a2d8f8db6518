#pragma once
// The one bridge between the widgets and the engine, for many chats on one Engine (one KV
// pool). It lives on its own QThread, the engine thread: every slot runs there (callers use
// queued calls), so its state needs no lock. What it does itself is thin: queued calls in,
// the StepLoop (one Engine::step per event-loop turn while there is work; pause and step
// mode), and coalescing out (text at ~30 Hz per reply, pool frames at ~30 Hz plus one when the
// work ends). The rest lives where it belongs: the engine is assembled by runtime/, each chat's
// held sequence is a ChatSession (engine/chat), each request's output comes from a
// RequestTracker, and the pool frames from a PoolFrameBuilder.
//
// The local API server (when built, PAGEDCHAT_HAVE_SERVER) submits through the bridge's
// RequestRouter: its requests run on this same Engine, batch with the chats, use the prefix
// cache the chats filled, and show in the pool frames as "API request N".

#include <QElapsedTimer>
#include <QObject>
#include <QString>

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <random>
#include <unordered_map>
#include <vector>

#include "engine/chat/chat_model.h"
#include "engine/chat/chat_session.h"
#include "engine/engine/request_tracker.h"
#include "engine/engine/step_loop.h"
#include "runtime/engine_assembly.h"
#include "appcore/chat/chat_types.h"
#include "appcore/bridge/model_info.h"
#include "appcore/pool/pool_frame.h"
#include "appcore/bridge/pool_frame_builder.h"
#include "appcore/bridge/disk_strip.h"
#include "appcore/chat/reply_metrics.h"
#include "appcore/bridge/harmony_reply.h"
#include "appcore/bridge/tool_turn.h"

class RequestRouter;

class EngineBridge : public QObject {
  Q_OBJECT
 public:
  struct Config {
    int maxContext = 2048;  // tokens one chat may hold
    int numBlocks = 0;      // KV pool in blocks; 0: from kvBytes
    qint64 kvBytes = 0;     // KV pool memory budget; 0 (and numBlocks 0): room for kChatsInPool chats
    int numHostBlocks = 0;  // host (swap) pool in blocks; 0: from hostBytes
    qint64 hostBytes = 0;   // host pool budget; 0 (and numHostBlocks 0): none, preemption recomputes
    QString kvDiskDir;      // the disk tier's folder; empty: none
    qint64 kvDiskBytes = 0; // its cap; 0: a tenth of the free space there
    int blockSize = 16;
    int maxBatchedTokens = 512;  // tokens per engine step (chunked prefill beyond it)
    int threads = 0;             // CPU threads of the forward pass; 0: all cores
    QString backend = QStringLiteral("cpu");  // "cuda" when built with it and a GPU is there
    QString kvType = QStringLiteral("f16");   // cpu: f16, q8_0 or f32 (cuda keeps its 16-bit type)
    QString speculation = QStringLiteral("off");  // "off", "ngram" or "draft" (with draftModel)
    QString draftModel;
    // "model": the model's own template, and plain text for a base model (a file with none);
    // "builtin": the built-in format recognised from it; "plain": plain text whatever the model.
    QString chatFormat = QStringLiteral("model");

    pagedchat::EngineOptions options() const {
      pagedchat::EngineOptions o;
      o.backend.name = backend.toStdString();
      o.backend.threads = std::clamp(threads, 0, 1024);
      o.backend.max_batch_tokens = std::max(maxBatchedTokens, 1);
      if (o.backend.name == "cpu") o.backend.kv_type = kvType.toStdString();
      o.engine.block_size = blockSize;
      o.engine.max_context = maxContext;
      o.engine.num_blocks = numBlocks;
      o.engine.max_batched_tokens = std::max(maxBatchedTokens, 1);
      o.kv_budget_bytes = kvBytes;
      o.engine.num_host_blocks = std::max(numHostBlocks, 0);
      o.host_budget_bytes = hostBytes;
      o.engine.kv_disk.dir = kvDiskDir.toStdString();
      o.engine.kv_disk.max_bytes = static_cast<uint64_t>(std::max<qint64>(kvDiskBytes, 0));
      o.num_contexts = kChatsInPool;
      if (speculation == QLatin1String("ngram")) o.speculation.speculate = "ngram";
      if (speculation == QLatin1String("draft")) o.speculation.draft_model = draftModel.toStdString();
      o.speculation.threads = o.backend.threads;
      return o;
    }
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
  bool isPaused() const { return m_loop.paused(); }

 public slots:
  // Builds the model, backend and engine from config aside; only when all of it loaded does
  // it replace what runs (the chats' sequences then start afresh).
  void loadModel(const QString& path, const Config& config);
  // The engine goes (the app closes, or another model replaces it): API requests in flight
  // fail with `why`, and every chat's sequences are forgotten.
  void unload(const QString& why);
  // A turn: messages is the whole chat, ending with the user's message. Only what it adds to
  // the chat's parked sequence is computed when it extends what that sequence holds. A
  // compare awaiting its pick must be picked first (pickSample). settings.continuesReply:
  // messages end with a reply cut by its length, and the turn writes more of it.
  void submit(ChatId chat, const ChatMessages& messages, const TurnSettings& settings);
  void stop(ChatId chat);  // the turn in flight ends ("abort") at the next step
  // The child chat (holding `messages`; nullopt: all the parent holds) starts from the
  // parent. When the parent holds a parked sequence whose first messages are those, the child
  // shares their blocks (a fork at their last token; copy-on-write, no recompute); otherwise
  // it holds nothing and its first turn is prompted whole, the prefix cache serving the full
  // blocks. forkDone says which happened.
  void fork(ChatId parent, ChatId child, const std::optional<ChatMessages>& messages = std::nullopt);
  void release(ChatId chat);  // the chat is gone: its sequences are freed
  // A deleted chat's blocks on disk go, but for those another chat's history starts with too
  // (a shared system prompt, a fork's prefix): gone and others as the engine would render them.
  void forgetOnDisk(const ChatMessages& gone, const QVector<ChatMessages>& others);
  // Compare: after a turn of n samples, the chat continues with sample `index`; the other
  // samples' sequences are freed.
  void pickSample(ChatId chat, int index);
  // The chat as the model would read it next (messages) in tokens, and the KV blocks its
  // sequences hold now: chatMeasured. With the disk tier, the tokens are kept for the pool
  // frames' disk strip (the controller measures every chat when an engine comes, and a chat
  // after each turn).
  void measure(ChatId chat, const ChatMessages& messages);
  // A message being typed (draft) as it would count if sent after messages: draftMeasured,
  // with the draft's own tokens and the chat's with it and the reply's opening.
  void measureDraft(ChatId chat, const ChatMessages& messages, const QString& draft);
  void setPaused(bool paused);
  void stepOnce();
  // Up to `steps` engine steps (while paused), a frame after each; with untilKvEvent, it stops
  // after the first step that changed a block (the "Next event" of the toolbar). It stops
  // early when the engine has nothing to do.
  void stepMany(int steps, bool untilKvEvent);
  void sendFrame();  // the pool as it is now, in a frame (the view comes back to this pool)
  // This machine's roofline for the model (engine/bench/roofline.h), measured here between
  // steps (a second or so, on a backend of its own, the engine's threads): rooflineMeasured.
  void measureRoofline();

 signals:
  void modelLoaded(const QString& description, int contextLength);
  void modelDescribed(const ModelInfo& info);  // right before modelLoaded: the model information panel's
  void modelFailed(const QString& error);
  void modelLoadCancelled();
  void loadProgress(const QString& stage, double fraction);  // ~20 Hz while loading
  void replyText(ChatId chat, int sample, const QString& text);  // coalesced, ~30 Hz
  void replyFinished(ChatId chat, int sample, const ReplyMetrics& metrics);
  // A turn that offered tools (TurnSettings::toolsJson): the sample's reply read whole, right
  // before its replyFinished. content replaces the text streamed (which showed only what was
  // surely content); calls: those it made, in order, with ids of ours (finish reason "tool_calls").
  void replyToolCalls(ChatId chat, int sample, const QString& content, const QVector<ToolCallRecord>& calls);
  void replyFailed(ChatId chat, const QString& error);
  void turnDone(ChatId chat, int contextUsed);  // every sample ended; tokens the chat now holds
  // Before a turn: the chat outgrew the context and its oldest `numDropped` messages (a
  // system prompt not counted) were left out of the model's view (ContextPolicy::dropOldest).
  void contextTrimmed(ChatId chat, int numDropped);
  // ContextPolicy::stopAndAsk: the chat's prompt (numTokens) leaves no room for a reply in
  // the context; nothing was submitted.
  void contextFull(ChatId chat, int numTokens, int contextLength);
  void forkDone(ChatId child, bool sharesBlocks, int contextUsed);
  void chatMeasured(ChatId chat, int conversationTokens, int blocksHeld);
  void draftMeasured(ChatId chat, const QString& draft, int draftTokens, int tokensWithDraft);
  void poolFrame(const PoolFrame& frame);
  // FLOP/s and bytes/s (both 0: the engine is not this machine's CPU backend, or no model), threads.
  void rooflineMeasured(double peakFlops, double readBandwidth, int threads);

 private:
  // The chat as the model reads it, in tokens (the built-in format's, close to it, when the
  // model's template refuses the chat).
  std::vector<int32_t> renderTokens(const pagedchat::ChatModel& model, const ChatMessages& messages, bool addGenerationPrompt) const;

  struct Chat {
    pagedchat::ChatSession session;
    // The chat's model with the tools its last turn offered (its prompts, forks and measures
    // render them); unset: none.
    std::optional<pagedchat::ChatModel> toolModel;
    std::optional<ToolTurn> tools;  // the turn in flight offers tools: its replies are read so
    // The turn appends tool results to the chat's sequence: its tokens [start, end), told in
    // the event log once they are stored ("tool result ..., blocks #40-#53").
    struct ToolResultNote {
      int64_t start = 0, end = 0;
      QString tools;  // the functions whose results they are
    };
    std::optional<ToolResultNote> toolNote;
    std::optional<pagedchat::ChatMessage> toolReply;  // the tool turn's reply as read (ChatSession::record_reply)
    // A harmony model's turn without tools: each sample's text as the app keeps it (<think> form).
    std::vector<HarmonyReplyText> harmony;
    // The turn in flight: what has been sent of each sample (coalescing).
    int64_t numPromptTokens = 0;
    std::vector<int32_t> maxTokens;  // each sample's: the engine's "length" is this or the context's end
    std::vector<size_t> sentBytes;  // of each sample's text (a tool turn's: of what it shows, in UTF-16 units)
    std::vector<bool> reported;
  };

  const pagedchat::ChatModel& modelOf(const Chat& c) const { return c.toolModel ? *c.toolModel : m_chatModel; }
  // A tool turn's sample: its text as shown, sent on; at its end, read whole (replyToolCalls).
  void deliverToolSample(ChatId id, Chat& c, size_t index, const pagedchat::SampleOutput& s, bool flushText);
  void noteToolResults();  // the tool results stored since the last step, as event-log notes
  std::vector<pagedchat::SequenceId> sequencesOf(const Chat& c) const;  // parked, and its turn's in flight
  int blocksHeld(const Chat& c) const;  // the distinct KV blocks of those
  bool stepAndReport();  // one step and its frame; whether the frame carries KV events
  ModelInfo describeModel(const QString& path, const Config& settings) const;

  static constexpr int kDisplayIntervalMs = 33;  // ~30 Hz: text and pool frames
  static constexpr int kApiColorIndex = 997;     // the pool view's colour for API requests

  pagedchat::SamplingParams samplingParams(const TurnSettings& settings);  // a seed of 0 draws one
  void onEvent(const pagedchat::EngineEvent& e);
  void afterStep(bool flushAll);
  void deliver(bool flushAll);
  void deliverChat(ChatId id, Chat& c, bool flushText);
  void failAll(const std::string& why);
  void emitFrame(const QString& stepSummary);
  void scheduleDiskFrame();

  pagedchat::AssembledEngine m_engine;
  pagedchat::ChatModel m_chatModel;  // m_engine's model with the chat template its chats use
  std::unique_ptr<pagedchat::RequestTracker> m_tracker;  // the chats' requests on m_engine
  pagedchat::StepLoop m_loop;
  std::unordered_map<ChatId, Chat> m_chats;
  std::unordered_map<pagedchat::RequestId, ChatId> m_requestChat;
  std::unordered_map<pagedchat::SequenceId, ChatId> m_pendingForks;  // child seq -> child chat
  std::vector<std::pair<ChatId, bool>> m_forksDone;
  PoolFrameBuilder m_frames;
  DiskStrip m_diskStrip;  // the frames' disk tier: the chats' histories measure() rendered
  bool m_diskFrameDue = false;  // a frame is coming for the strip's pending rebuild
  QString m_lastStepSummary;     // the last frame's
  QElapsedTimer m_textClock, m_frameClock;
  std::atomic<bool> m_cancelLoad{false};
  int m_stepSampled = 0;  // token events of the step in progress (step summary)
  std::random_device m_seeds;
#ifdef PAGEDCHAT_HAVE_SERVER
  std::shared_ptr<RequestRouter> m_api;
#endif
};

// Runs f(bridge) on the engine thread, where every bridge call runs; the caller never waits.
// A null bridge (no engine, as in some tests) runs nothing.
template <class F>
void onEngineThread(EngineBridge* bridge, F f) {
  if (bridge) QMetaObject::invokeMethod(bridge, [bridge, f = std::move(f)] { f(*bridge); }, Qt::QueuedConnection);
}
