// The engine side of the app: loads the model, steps the one Engine while any chat has work,
// routes each step's events to their chats, and coalesces what it sends to the UI thread.
#include "ui/engine_bridge.h"

#include <QFileInfo>
#include <QMetaObject>

#include <algorithm>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/chat/chat_continuation.h"
#include "engine/model/model.h"
#ifdef PAGEDCHAT_HAVE_SERVER
#include "server/request_router.h"
#endif
#ifdef PAGEDCHAT_HAVE_CUDA
#include "kernels/cuda_backend.h"
#endif

namespace {
constexpr int kDisplayIntervalMs = 33;  // ~30 Hz: text and pool frames
#ifdef PAGEDCHAT_HAVE_SERVER
constexpr int kApiColorIndex = 997;     // the pool view's colour for API requests

// KV events after which the sequence holds a block.
bool holdsBlocks(pagedchat::KvEventKind k) {
  using K = pagedchat::KvEventKind;
  return k == K::allocate || k == K::share || k == K::cache_hit || k == K::copy_on_write || k == K::swap_in;
}
#endif

std::vector<pagedchat::ChatMessage> toEngine(const ChatMessages& messages) {
  std::vector<pagedchat::ChatMessage> chat;
  for (const auto& m : messages) chat.push_back({m.first.toStdString(), m.second.toStdString()});
  return chat;
}
}  // namespace

struct EngineBridge::Loaded {
  // Shared with the pool frames' detokenize function, which the UI may call after a reload.
  std::shared_ptr<const pagedchat::Model> model;
  std::unique_ptr<pagedchat::Backend> backend;
  std::unique_ptr<pagedchat::Engine> engine;
};

EngineBridge::EngineBridge(QObject* parent) : QObject(parent) {
  qRegisterMetaType<PoolFrame>();
  qRegisterMetaType<ReplyMetrics>();
  qRegisterMetaType<ChatId>("ChatId");
  m_textClock.start();
  m_frameClock.start();
#ifdef PAGEDCHAT_HAVE_SERVER
  m_api = std::make_shared<RequestRouter>();
#endif
}

EngineBridge::~EngineBridge() { unload(QStringLiteral("the app is closing")); }

pagedchat::SamplingParams EngineBridge::samplingParams(const TurnSettings& settings) {
  pagedchat::SamplingParams p;
  p.temperature = static_cast<float>(settings.temperature);
  p.top_p = static_cast<float>(settings.topP);
  p.top_k = settings.topK;
  p.min_p = static_cast<float>(settings.minP);
  p.repetition_penalty = static_cast<float>(settings.repetitionPenalty);
  p.max_tokens = settings.maxTokens;
  p.seed = settings.seed != 0 ? settings.seed : (static_cast<uint64_t>(m_seeds()) << 32) | m_seeds();
  return p;
}

bool EngineBridge::cudaAvailable() {
#ifdef PAGEDCHAT_HAVE_CUDA
  return pagedchat::kernels::cuda_device_count() > 0;
#else
  return false;
#endif
}

void EngineBridge::unload(const QString& why) {
#ifdef PAGEDCHAT_HAVE_SERVER
  m_api->detach(QStringLiteral("the model was unloaded: %1").arg(why));
  m_apiSequences.clear();
#else
  Q_UNUSED(why);
#endif
  m_loaded.reset();  // the engine goes before the state its event sink points at
  m_chats.clear();  // their sequences lived in that engine
  m_requestChat.clear();
  m_pendingForks.clear();
}

pagedchat::EngineStats EngineBridge::engineStats() const {
  return m_loaded ? m_loaded->engine->stats() : pagedchat::EngineStats{};
}

void EngineBridge::loadModel(const QString& path, const Config& settings) {
  QElapsedTimer sinceReport;
  sinceReport.start();
  QString lastStage;
  const pagedchat::LoadProgress progress(
      [&](std::string_view stage, double fraction) {
        const QString name = QString::fromUtf8(stage.data(), static_cast<qsizetype>(stage.size()));
        if (name == lastStage && fraction < 1.0 && sinceReport.elapsed() < 50) return;
        lastStage = name;
        sinceReport.restart();
        emit loadProgress(name, fraction);
      },
      &m_cancelLoad);
  try {
    // Built aside and swapped in only when everything loaded: a bad file leaves the model
    // that was working in place.
    auto loaded = std::make_unique<Loaded>();
    std::shared_ptr<pagedchat::Model> model = pagedchat::Model::load(path.toStdString(), progress);
    int64_t kvElementBytes = sizeof(float);  // f32 K and V on the CPU
    int32_t cudaBlocksThatFit = 0;
    QString backendText;
    if (settings.backend == QLatin1String("cuda")) {
#ifdef PAGEDCHAT_HAVE_CUDA
      pagedchat::kernels::CudaBackendConfig cc;  // bf16 weights and KV
      cc.max_batch_tokens = std::max(settings.maxBatchedTokens, 1);
      auto cuda = std::make_unique<pagedchat::kernels::CudaBackend>(model->weights, cc);
      cudaBlocksThatFit = cuda->kv_blocks_that_fit(settings.blockSize, 0.9);
      backendText = QStringLiteral("CUDA (%1)").arg(QString::fromStdString(cuda->device_name()));
      kvElementBytes = 2;
      loaded->backend = std::move(cuda);
#else
      throw pagedchat::Error("this build has no CUDA backend (configure with -DPAGEDCHAT_CUDA=ON where the CUDA toolkit is)");
#endif
    } else {
      auto cpu = std::make_unique<pagedchat::CpuBackend>(model->weights, std::clamp(settings.threads, 0, 1024),
                                                         pagedchat::cpu::MatmulPrecision::kQuantizedActivations, progress);
      backendText = QStringLiteral("%1 threads · CPU").arg(cpu->num_threads());
      loaded->backend = std::move(cpu);
    }
    pagedchat::EngineConfig config;
    config.block_size = settings.blockSize;
    config.max_context = std::min(model->config().context_length, settings.maxContext);
    const int blocksPerChat = (config.max_context + config.block_size - 1) / config.block_size;
    // The budget in blocks: the bytes of one block across all layers, K and V.
    const pagedchat::KvCacheShape shape{model->config().num_layers, model->config().num_kv_heads, model->config().head_dim, 0,
                                        config.block_size};
    const int64_t budgetBlocks = settings.kvBytes / static_cast<int64_t>(shape.block_bytes(static_cast<int>(kvElementBytes)));
    config.num_blocks = settings.numBlocks > 0 ? settings.numBlocks
                        : settings.kvBytes > 0 ? static_cast<int>(std::clamp<int64_t>(budgetBlocks, 1, 1 << 24))
                                               : blocksPerChat * kChatsInPool;
    // On a GPU, never more than 90% of the memory left after the weights (as vLLM sizes it).
    if (cudaBlocksThatFit > 0) config.num_blocks = std::min(config.num_blocks, cudaBlocksThatFit);
    config.max_batched_tokens = std::max(settings.maxBatchedTokens, 1);
    loaded->engine = std::make_unique<pagedchat::Engine>(*model, *loaded->backend, config);
    loaded->engine->subscribe([this](const pagedchat::EngineEvent& e) { onEvent(e); });
    loaded->model = model;
    const int contextLength = config.max_context;
    unload(QStringLiteral("the app loaded another model"));
    m_loaded = std::move(loaded);
#ifdef PAGEDCHAT_HAVE_SERVER
    m_api->setModelId(QFileInfo(path).completeBaseName());
    // The router's wake comes from the server's thread: a queued call to our own wake.
    m_api->attach(model, *m_loaded->engine, [this] { QMetaObject::invokeMethod(this, [this] { wake(); }, Qt::QueuedConnection); });
#endif
    auto detokenize = std::make_shared<const std::function<QString(const std::vector<int32_t>&)>>(
        [model](const std::vector<int32_t>& ids) { return QString::fromStdString(model->tokenizer->decode(ids, true)); });
    m_frames.reset(detokenize, contextLength);
    const auto& c = model->config();
    emit modelLoaded(QStringLiteral("%1 · %2 layers · %3 · %4 KV blocks of %5 tokens")
                         .arg(QString::fromStdString(c.name))
                         .arg(c.num_layers)
                         .arg(backendText)
                         .arg(config.num_blocks)
                         .arg(config.block_size),
                     contextLength);
    emitFrame(QString());
  } catch (const pagedchat::LoadCancelled&) {
    emit modelLoadCancelled();
  } catch (const std::exception& e) {
    emit modelFailed(QString::fromUtf8(e.what()));
  }
}

void EngineBridge::forgetHeld(ChatState& c) {
  if (c.parkedSeq >= 0 && m_loaded) m_loaded->engine->release(c.parkedSeq);
  c.parkedSeq = -1;
  c.heldMessages.clear();
  c.heldTokens.clear();
}

std::vector<int32_t> EngineBridge::turnPrompt(ChatState& c, const std::vector<pagedchat::ChatMessage>& chat,
                                              pagedchat::SequenceId& continueSeq) {
  const pagedchat::Model& model = *m_loaded->model;
  const pagedchat::KvManager& kv = m_loaded->engine->kv();
  continueSeq = -1;
  if (c.parkedSeq >= 0 && kv.has_sequence(c.parkedSeq) && kv.state(c.parkedSeq) == pagedchat::SequenceState::parked) {
    // What the engine stores, then the last sampled token when it was not computed (a reply
    // ended by its length), then the text that closes the reply and opens the new turn.
    const size_t stored = static_cast<size_t>(kv.num_tokens(c.parkedSeq));
    auto text = pagedchat::chat_continuation(model.chat_template, c.heldMessages, chat);
    if (text && stored <= c.heldTokens.size() && c.heldTokens.size() - stored <= 1) {
      std::vector<int32_t> prompt(c.heldTokens.begin() + static_cast<std::ptrdiff_t>(stored), c.heldTokens.end());
      std::vector<int32_t> added = model.tokenizer->encode(*text, false, true);
      prompt.insert(prompt.end(), added.begin(), added.end());
      continueSeq = c.parkedSeq;
      return prompt;
    }
  }
  // Reclaimed under memory pressure, or a chat that does not extend it (an edited system
  // prompt, a regenerated reply): the whole chat, the prefix cache serving what it can.
  forgetHeld(c);
  return model.encode_chat(chat);
}

void EngineBridge::submit(ChatId chat, const ChatMessages& messages, const TurnSettings& settings) {
  if (!m_loaded) {
    emit replyFailed(chat, tr("No model is loaded."));
    return;
  }
  ChatState& c = m_chats[chat];
  if (c.turn) {
    emit replyFailed(chat, tr("This chat is still replying."));
    return;
  }
  if (c.unpicked) pickSample(chat, 0);  // a compare left unpicked continues with its first column
  try {
    auto turn = std::make_unique<Turn>();
    turn->messages = toEngine(messages);
    pagedchat::Request request;
    request.prompt = turnPrompt(c, turn->messages, request.continue_seq);
    request.params = samplingParams(settings);
    request.n = std::clamp(settings.numSamples, 1, 8);
    if (!settings.columns.empty()) {
      request.n = static_cast<int>(std::min<size_t>(settings.columns.size(), 8));
      for (int i = 0; i < request.n; ++i) request.sample_params.push_back(samplingParams(settings.columns[static_cast<size_t>(i)]));
    }
    request.park_when_done = true;
    if (request.continue_seq >= 0) {
      turn->promptTokens = c.heldTokens;
      turn->promptTokens.resize(static_cast<size_t>(m_loaded->engine->kv().num_tokens(request.continue_seq)));
    }
    turn->promptTokens.insert(turn->promptTokens.end(), request.prompt.begin(), request.prompt.end());
    turn->numPromptTokens = static_cast<int64_t>(request.prompt.size());
    turn->samples.resize(static_cast<size_t>(request.n));
    turn->clock.start();
    // The parked sequence becomes the running one; it is ours again when the turn ends.
    c.parkedSeq = -1;
    turn->request = m_loaded->engine->submit(std::move(request));
    m_requestChat[turn->request] = chat;
    c.turn = std::move(turn);
    wake();
  } catch (const std::exception& e) {
    emit replyFailed(chat, QString::fromUtf8(e.what()));
  }
}

void EngineBridge::stop(ChatId chat) {
  auto it = m_chats.find(chat);
  if (it == m_chats.end() || !it->second.turn || !m_loaded) return;
  m_loaded->engine->abort(it->second.turn->request);
  wake();
}

void EngineBridge::fork(ChatId parent, ChatId child) {
  ChatState& p = m_chats[parent];
  ChatState& c = m_chats[child];
  forgetHeld(c);
  const bool canShare = m_loaded && !p.turn && !p.unpicked && p.parkedSeq >= 0 &&
                        m_loaded->engine->kv().has_sequence(p.parkedSeq) &&
                        m_loaded->engine->kv().state(p.parkedSeq) == pagedchat::SequenceState::parked;
  if (!canShare) {
    emit forkDone(child, false);
    return;
  }
  c.parkedSeq = m_loaded->engine->fork(p.parkedSeq);
  c.heldMessages = p.heldMessages;
  c.heldTokens = p.heldTokens;
  m_pendingForks[c.parkedSeq] = child;
  wake();  // the fork is a command the next step applies
}

void EngineBridge::releaseUnpicked(ChatState& c, int keep) {
  if (!c.unpicked || !m_loaded) return;
  for (int i = 0; i < static_cast<int>(c.unpicked->samples.size()); ++i) {
    const Sample& s = c.unpicked->samples[static_cast<size_t>(i)];
    if (i != keep && s.parked && s.seq >= 0) m_loaded->engine->release(s.seq);
  }
}

void EngineBridge::pickSample(ChatId chat, int index) {
  auto it = m_chats.find(chat);
  if (it == m_chats.end() || !it->second.unpicked) return;
  ChatState& c = it->second;
  const int n = static_cast<int>(c.unpicked->samples.size());
  index = std::clamp(index, 0, n - 1);
  releaseUnpicked(c, index);
  Sample& s = c.unpicked->samples[static_cast<size_t>(index)];
  if (s.parked) {
    c.parkedSeq = s.seq;
    c.heldTokens = c.unpicked->promptTokens;
    c.heldTokens.insert(c.heldTokens.end(), s.tokens.begin(), s.tokens.end());
    c.heldMessages = c.unpicked->messages;
    c.heldMessages.push_back({"assistant", s.text});
  }
  c.unpicked.reset();
  wake();
}

void EngineBridge::release(ChatId chat) {
  auto it = m_chats.find(chat);
  if (it == m_chats.end()) return;
  ChatState& c = it->second;
  if (c.turn && m_loaded) {
    m_loaded->engine->abort(c.turn->request);
    m_requestChat.erase(c.turn->request);
  }
  releaseUnpicked(c, -1);
  forgetHeld(c);
  m_chats.erase(it);
  wake();
}

void EngineBridge::setChatTitle(ChatId chat, const QString& title) { m_chats[chat].title = title; }

void EngineBridge::setPaused(bool paused) {
  m_paused = paused;
  if (!paused) wake();
}

void EngineBridge::stepOnce() {
  if (!m_loaded) return;
  runStep();
  deliver(true);
  emitFrame(m_frames.describeStep(m_loaded->engine->stats(), m_stepSampled));
}

void EngineBridge::wake() {
  if (m_pumpQueued) return;
  m_pumpQueued = true;
  QMetaObject::invokeMethod(this, &EngineBridge::pump, Qt::QueuedConnection);
}

// One step per event-loop turn, so stop, fork and pause are seen between steps.
void EngineBridge::pump() {
  m_pumpQueued = false;
  if (!m_loaded || m_paused) return;
  runStep();
  const bool more = m_loaded->engine->has_work();
  deliver(!more);
  if (more) {
    if (m_frameClock.elapsed() >= kDisplayIntervalMs) emitFrame(QString());
    wake();
  } else {
    emitFrame(QString());  // the pool as the work left it
  }
}

void EngineBridge::runStep() {
  m_frames.beginStep(m_loaded->engine->stats());
  m_stepSampled = 0;
  try {
    m_loaded->engine->step();
  } catch (const std::exception& e) {
    // The engine reports request errors as events; an exception here is our bug or memory
    // running out. The turns in flight fail with it rather than hang; the app goes on.
    for (auto& [id, c] : m_chats) {
      if (!c.turn) continue;
      c.turn->error = std::string("the engine step failed: ") + e.what();
      m_loaded->engine->abort(c.turn->request);
    }
#ifdef PAGEDCHAT_HAVE_SERVER
    m_api->failAll(QStringLiteral("the forward pass failed: the engine step failed: %1").arg(QString::fromUtf8(e.what())));
#endif
  }
#ifdef PAGEDCHAT_HAVE_SERVER
  m_api->afterStep();
#endif
}

EngineBridge::ChatState* EngineBridge::chatOfRequest(pagedchat::RequestId request) {
  auto it = m_requestChat.find(request);
  if (it == m_requestChat.end()) return nullptr;
  auto c = m_chats.find(it->second);
  return c == m_chats.end() || !c->second.turn || c->second.turn->request != request ? nullptr : &c->second;
}

// Inside step(), on the engine thread: collect, send later (deliver).
void EngineBridge::onEvent(const pagedchat::EngineEvent& e) {
  using Kind = pagedchat::EngineEventKind;
#ifdef PAGEDCHAT_HAVE_SERVER
  // Every request that is not a chat's came through the API router; remember its sequences
  // for the pool frames' labels while they live.
  if (e.request >= 0 && !m_requestChat.count(e.request)) {
    const pagedchat::SequenceId seq = e.kind == Kind::kv ? e.kv.seq : e.seq;
    if (e.kind == Kind::error) std::erase_if(m_apiSequences, [&](const auto& kv) { return kv.second == e.request; });
    else if (e.kind == Kind::finished || (e.kind == Kind::kv && e.kv.kind == pagedchat::KvEventKind::finish)) m_apiSequences.erase(seq);
    else if (seq >= 0 && (e.kind == Kind::token || (e.kind == Kind::kv && holdsBlocks(e.kv.kind)))) m_apiSequences[seq] = e.request;
  }
#endif
  if (e.kind == Kind::kv) {
    m_frames.onKvEvent(e.kv);
    ChatState* c = chatOfRequest(e.request);
    // A prompt block found in the prefix cache, counted until the first token (later hits are
    // a preempted sequence finding its own blocks again).
    if (c && e.kv.kind == pagedchat::KvEventKind::cache_hit && !c->turn->sawToken) ++c->turn->numCacheHitBlocks;
    if (e.kv.kind == pagedchat::KvEventKind::fork) {
      auto f = m_pendingForks.find(e.kv.seq);
      if (f != m_pendingForks.end()) {
        m_forksDone.emplace_back(f->second, true);
        m_pendingForks.erase(f);
      }
    }
    return;
  }
  if (e.kind == Kind::error && e.request < 0) {
    // A fork the engine refused (the parent went away meanwhile): the child starts afresh.
    auto f = m_pendingForks.find(e.seq);
    if (f == m_pendingForks.end()) return;
    auto c = m_chats.find(f->second);
    if (c != m_chats.end()) {
      c->second.parkedSeq = -1;
      c->second.heldMessages.clear();
      c->second.heldTokens.clear();
    }
    m_forksDone.emplace_back(f->second, false);
    m_pendingForks.erase(f);
    return;
  }
  ChatState* c = chatOfRequest(e.request);
  if (!c) return;
  Turn& t = *c->turn;
  if (e.kind == Kind::error) {
    t.error = e.reason;
    return;
  }
  if (e.index < 0 || e.index >= static_cast<int>(t.samples.size())) return;
  Sample& s = t.samples[static_cast<size_t>(e.index)];
  s.seq = e.seq;
  s.text += e.text;
  s.unsentText += QString::fromStdString(e.text);
  const double now = t.clock.nsecsElapsed() / 1e9;
  if (e.kind == Kind::token) {
    t.sawToken = true;
    ++m_stepSampled;
    if (e.token >= 0) s.tokens.push_back(e.token);
    if (s.firstTokenAt < 0) s.firstTokenAt = now;
    s.lastTokenAt = now;
  } else if (e.kind == Kind::finished) {
    s.finished = true;
    s.parked = e.parked;
    s.reason = e.reason;
    if (s.firstTokenAt < 0) s.firstTokenAt = s.lastTokenAt = now;
  }
}

void EngineBridge::deliver(bool flushAll) {
  for (auto [child, shares] : std::exchange(m_forksDone, {})) emit forkDone(child, shares);
  const bool flushText = flushAll || m_textClock.elapsed() >= kDisplayIntervalMs;
  if (flushText) m_textClock.restart();
  std::vector<ChatId> ended;
  for (auto& [id, c] : m_chats) {
    if (!c.turn) continue;
    Turn& t = *c.turn;
    bool allEnded = true;
    for (int i = 0; i < static_cast<int>(t.samples.size()); ++i) {
      Sample& s = t.samples[static_cast<size_t>(i)];
      if ((flushText || s.finished) && !s.unsentText.isEmpty()) emit replyText(id, i, std::exchange(s.unsentText, {}));
      if (s.finished && !s.reported) {
        s.reported = true;
        ReplyMetrics m;
        m.numTokens = static_cast<int>(s.tokens.size());
        m.secondsToFirstToken = s.firstTokenAt;
        m.tokensPerSecond = s.tokens.size() > 1 ? (s.tokens.size() - 1) / std::max(s.lastTokenAt - s.firstTokenAt, 1e-9) : 0.0;
        m.numPromptTokens = t.numPromptTokens;
        m.numCachedPromptTokens = t.numCacheHitBlocks * m_loaded->engine->kv().block_size();
        m.finishReason = QString::fromStdString(s.reason);
        emit replyFinished(id, i, m);
      }
      allEnded = allEnded && s.finished;
    }
    // A failed request may end without a finished event for every sample.
    if (allEnded || !t.error.empty()) ended.push_back(id);
  }
  for (ChatId id : ended) endTurn(id, m_chats[id]);
}

void EngineBridge::endTurn(ChatId id, ChatState& c) {
  std::unique_ptr<Turn> t = std::move(c.turn);
  m_requestChat.erase(t->request);
  if (!t->error.empty()) {
    for (const Sample& s : t->samples)
      if (s.parked) m_loaded->engine->release(s.seq);
    emit replyFailed(id, QString::fromStdString(t->error));
    emit turnDone(id, 0);
    return;
  }
  int contextUsed = 0;
  if (t->samples.size() == 1) {
    const Sample& s = t->samples[0];
    if (s.parked) {
      // Kept for the next turn: the chat now holds this reply too.
      c.parkedSeq = s.seq;
      c.heldTokens = t->promptTokens;
      c.heldTokens.insert(c.heldTokens.end(), s.tokens.begin(), s.tokens.end());
      c.heldMessages = t->messages;
      c.heldMessages.push_back({"assistant", s.text});
      contextUsed = static_cast<int>(c.heldTokens.size());
    }
    // Otherwise stopped: the engine freed the sequence; the next turn reads the chat afresh.
  } else {
    contextUsed = static_cast<int>(t->promptTokens.size() + t->samples[0].tokens.size());
    c.unpicked = std::move(t);  // the samples stay parked until one is picked
  }
  emit turnDone(id, contextUsed);
}

void EngineBridge::emitFrame(const QString& stepSummary) {
  if (!m_loaded) return;
  m_frameClock.restart();
  // Each sequence labelled with its chat: the parked one, the samples in flight or unpicked.
  std::unordered_map<pagedchat::SequenceId, ChatId> owner;
  for (const auto& [id, c] : m_chats) {
    if (c.parkedSeq >= 0) owner[c.parkedSeq] = id;
    for (const Turn* t : {c.turn.get(), c.unpicked.get()})
      if (t)
        for (const Sample& s : t->samples)
          if (s.seq >= 0) owner[s.seq] = id;
  }
  auto label = [&](pagedchat::SequenceId seq) -> std::pair<QString, int> {
    auto it = owner.find(seq);
#ifdef PAGEDCHAT_HAVE_SERVER
    if (auto api = m_apiSequences.find(seq); it == owner.end() && api != m_apiSequences.end())
      return {tr("API request %1").arg(api->second), kApiColorIndex};
#endif
    if (it == owner.end()) return {tr("sequence %1").arg(seq), -1};
    const QString& title = m_chats[it->second].title;
    return {title.isEmpty() ? tr("chat %1").arg(it->second) : title, static_cast<int>(it->second % 1000)};
  };
  emit poolFrame(m_frames.build(*m_loaded->engine, label, stepSummary));
}
