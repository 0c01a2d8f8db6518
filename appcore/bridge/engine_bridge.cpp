// The engine side of the app: queued calls in, one step loop, coalesced signals out.
#include "appcore/bridge/engine_bridge.h"

#include "appcore/chat/answer_format.h"

#include <QFileInfo>
#include <QMetaObject>
#include <QTimer>

#include <algorithm>
#include <set>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/bench/roofline.h"
#include "engine/chat/context_fit.h"
#include "engine/chat/reasoning.h"
#include "engine/model/model.h"
#include "models/model_summary.h"
#ifdef PAGEDCHAT_HAVE_SERVER
#include "server/engine/request_router.h"
#endif

EngineBridge::EngineBridge(QObject* parent)
    : QObject(parent),
      m_loop({.post = [this] { QMetaObject::invokeMethod(this, [this] { m_loop.run_once(); }, Qt::QueuedConnection); },
              .before_step =
                  [this] {
                    m_frames.beginStep(m_engine.engine->stats());
                    m_stepSampled = 0;
                  },
              .on_step_failed = [this](const std::string& why) { failAll(why); },
              .after_step =
                  [this](bool more) {
                    afterStep(!more);
                    if (!more || m_frameClock.elapsed() >= kDisplayIntervalMs) emitFrame(QString());
                  },
              .while_paused =
                  [this] {
#ifdef PAGEDCHAT_HAVE_SERVER
                    m_api->afterStep();  // what the local API owes without a step (a pool watcher's first frame)
#endif
                  }}) {
  qRegisterMetaType<PoolFrame>();
  qRegisterMetaType<ReplyMetrics>();
  qRegisterMetaType<ChatId>("ChatId");
  qRegisterMetaType<ModelInfo>();
  m_textClock.start();
  m_frameClock.start();
#ifdef PAGEDCHAT_HAVE_SERVER
  m_api = std::make_shared<RequestRouter>();
#endif
}

EngineBridge::~EngineBridge() { unload(QStringLiteral("the app is closing")); }

bool EngineBridge::cudaAvailable() { return pagedchat::cuda_available(); }

pagedchat::SamplingParams EngineBridge::samplingParams(const TurnSettings& settings) {
  pagedchat::SamplingParams p = toSamplingParams(settings, (static_cast<uint64_t>(m_seeds()) << 32) | m_seeds());
  p.grammar = answerGrammar(settings.answerFormat);  // throws for a schema that cannot be: the turn is refused with it
  return p;
}

void EngineBridge::unload(const QString& why) {
#ifdef PAGEDCHAT_HAVE_SERVER
  m_api->detach(QStringLiteral("the model was unloaded: %1").arg(why));
#else
  Q_UNUSED(why);
#endif
  m_loop.attach(nullptr);
  m_chatModel = {};
  m_engine.reset();  // the engine goes before the tracker its events feed
  m_tracker.reset();
  m_chats.clear();  // their sequences lived in that engine
  m_diskStrip.clear();
  m_requestChat.clear();
  m_pendingForks.clear();
}

pagedchat::EngineStats EngineBridge::engineStats() const {
  return m_engine ? m_engine.engine->stats() : pagedchat::EngineStats{};
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
    std::unique_ptr<pagedchat::Model> model = pagedchat::Model::load(path.toStdString(), progress);
    pagedchat::ChatTemplate tmpl = pagedchat::ChatModel::own_template(*model);
    // A base model continues text: in a chat format it writes the next turns itself.
    const bool baseModel = !model->weights.file.has("tokenizer.chat_template");
    if (settings.chatFormat == QLatin1String("plain") || (settings.chatFormat == QLatin1String("model") && baseModel))
      tmpl = pagedchat::ChatTemplate::plain_text();
    else if (settings.chatFormat == QLatin1String("builtin"))
      tmpl = tmpl.builtin();
    pagedchat::AssembledEngine next = pagedchat::assemble_engine(std::move(model), settings.options(), progress);
    unload(QStringLiteral("the app loaded another model"));
    m_engine = std::move(next);
    m_chatModel = pagedchat::ChatModel(m_engine.model, std::move(tmpl));
    pagedchat::Engine& engine = *m_engine.engine;
    m_tracker = std::make_unique<pagedchat::RequestTracker>(engine);
    engine.subscribe([this](const pagedchat::EngineEvent& e) { onEvent(e); });
    m_loop.attach(&engine);
#ifdef PAGEDCHAT_HAVE_SERVER
    m_api->setModelId(QFileInfo(path).completeBaseName());
    // The router's wake comes from the server's thread: the loop's wake queues a call to us.
    m_api->attach(m_chatModel, engine, [this] { m_loop.wake(); });
#endif
    auto detokenize = std::make_shared<const std::function<QString(const std::vector<int32_t>&)>>(
        [model = m_engine.model](const std::vector<int32_t>& ids) { return QString::fromStdString(model->tokenizer->decode(ids, true)); });
    const auto& c = m_engine.model->config();
    PoolFrameWindow window;
    window.window = c.sliding_window;
    window.numLayers = c.num_layers;
    for (int l = 0; l < c.num_layers; ++l) window.numLocalLayers += c.is_local_layer(l) ? 1 : 0;
    m_frames.reset(detokenize, m_engine.max_context, window);
    QString loaded = QStringLiteral("%1 · %2 layers · %3 · %4 KV blocks of %5 tokens")
                         .arg(QString::fromStdString(c.name))
                         .arg(c.num_layers)
                         .arg(QString::fromStdString(m_engine.backend_description))
                         .arg(m_engine.num_blocks)
                         .arg(engine.block_size());
    if (m_engine.speculation != "no speculation") loaded += QStringLiteral(" · speculative: ") + QString::fromStdString(m_engine.speculation);
    const pagedchat::ChatTemplate& used = m_chatModel.chat_template();
    if (!used.fallback_reason().empty())
      loaded += QStringLiteral(" · %1 (%2)").arg(QString::fromStdString(used.describe()), QString::fromStdString(used.fallback_reason()));
    const ModelInfo info = describeModel(path, settings);
    if (info.baseModel) loaded += tr(" · a base model: its file has no chat template");
    if (used.style() == pagedchat::ChatTemplate::Style::kPlainText) loaded += tr(" · plain text: replies continue your text");
    emit modelDescribed(info);  // first: the window has it when the model is ready
    emit modelLoaded(loaded, m_engine.max_context);
    emitFrame(QString());
  } catch (const pagedchat::LoadCancelled&) {
    emit modelLoadCancelled();
  } catch (const std::exception& e) {
    emit modelFailed(QString::fromUtf8(e.what()));
  }
}

ModelInfo EngineBridge::describeModel(const QString& path, const Config& settings) const {
  const pagedchat::ModelConfig& c = m_engine.model->config();
  ModelInfo info;
  info.path = QFileInfo(path).absoluteFilePath();
  info.name = QString::fromStdString(c.name);
  info.architecture = QString::fromStdString(c.architecture);
  try {
    // The header alone (mapped; only its pages are read): the parameter count and quantization.
    const pagedchat::models::ModelSummary summary = pagedchat::models::summarize_model(path.toStdString());
    info.parameters = QString::fromStdString(pagedchat::models::format_parameters(summary.parameters));
    info.activeParameters = QString::fromStdString(pagedchat::models::format_parameters(summary.active_parameters));
    info.quantization = QString::fromStdString(summary.quantization);
    info.fileSize = QString::fromStdString(pagedchat::models::format_bytes(summary.file_size));
    info.baseModel = !summary.has_chat_template;
  } catch (const std::exception& e) {
    info.parameters = info.quantization = info.fileSize = tr("not known (%1)").arg(QString::fromUtf8(e.what()));
  }
  info.layers = c.num_layers;
  info.hiddenSize = c.dim;
  info.heads = c.num_heads;
  info.kvHeads = c.num_kv_heads;
  info.headDim = c.head_dim;
  info.vocabulary = c.vocab_size;
  info.trainedContext = c.context_length;
  info.chatContext = m_engine.max_context;
  info.slidingWindow = c.sliding_window;
  info.experts = c.num_experts;
  info.expertsUsed = c.num_experts_used;
  info.expertFfn = c.expert_ffn_dim;
  for (int l = 0; l < c.num_layers; ++l) info.localLayers += c.is_local_layer(l) ? 1 : 0;
  const pagedchat::ChatTemplate& tmpl = m_chatModel.chat_template();
  info.chatTemplate = QString::fromStdString(tmpl.describe());
  info.templateFallback = QString::fromStdString(tmpl.fallback_reason());
  info.plainText = tmpl.style() == pagedchat::ChatTemplate::Style::kPlainText;
  info.backend = QString::fromStdString(m_engine.backend_description);
  info.speculation = QString::fromStdString(m_engine.speculation);
  info.kvType = settings.backend == QLatin1String("cpu") ? settings.kvType : QStringLiteral("f16");
  info.blockSize = m_engine.engine->block_size();
  info.numBlocks = m_engine.num_blocks;
  info.numHostBlocks = m_engine.num_host_blocks;
  const uint64_t perBlock = m_engine.engine->stats().kv.bytes_per_block;
  info.kvBytesPerToken = info.blockSize > 0 ? static_cast<qint64>(perBlock / static_cast<uint64_t>(info.blockSize)) : 0;
  return info;
}

void EngineBridge::submit(ChatId chat, const ChatMessages& messages, const TurnSettings& settings) {
  // A refused turn ends as it began: failed, then done (the chat holds what it held).
  auto refuse = [&](const QString& why) {
    emit replyFailed(chat, why);
    emit turnDone(chat, m_chats[chat].session.context_used());
  };
  if (!m_engine) return refuse(tr("No model is loaded."));
  Chat& c = m_chats[chat];
  if (c.session.request() >= 0) return emit replyFailed(chat, tr("This chat is still replying."));
  if (c.session.awaiting_pick()) return refuse(tr("Pick one of the compared replies first."));
  try {
    std::optional<ToolTurn> tools;
    if (!settings.toolsJson.isEmpty()) {
      if (m_chatModel.chat_template().style() == pagedchat::ChatTemplate::Style::kPlainText)
        return refuse(tr("This model continues text (plain text, no chat format): it cannot call tools. Turn this chat's tools "
                         "off, or load a chat model."));
      if (!settings.answerFormat.isEmpty())
        return refuse(tr("This chat answers in JSON and offers tools: a reply can follow only one of them. Turn one off in "
                         "the chat's settings."));
      tools.emplace(settings, m_chatModel);  // throws for a tool that cannot be offered, naming it
    }
    c.toolModel = tools ? std::optional(tools->chatModel()) : std::nullopt;
    const pagedchat::ChatModel& model = modelOf(c);
    // Room for a reply (max tokens, at most a quarter of the context), or the chat's policy.
    const int64_t context = m_engine.max_context, reserve = std::min<int64_t>(settings.maxTokens, context / 4);
    const bool drop = settings.contextPolicy == ContextPolicy::dropOldest;
    pagedchat::ContextFit fit = pagedchat::fit_context(model, toEngineMessages(messages), context, reserve, drop);
    if (!fit.fits && !drop) return emit contextFull(chat, static_cast<int>(fit.num_tokens), static_cast<int>(context));
    if (!fit.fits)
      return refuse(tr("The last message alone takes %1 of the context's %2 tokens: there is no room for a "
                                       "reply. Shorten it, or raise the context in Settings.").arg(fit.num_tokens).arg(context));
    if (fit.num_dropped > 0) emit contextTrimmed(chat, static_cast<int>(fit.num_dropped));
    const auto plan = settings.continuesReply ? &pagedchat::ChatSession::plan_continue : &pagedchat::ChatSession::plan_turn;
    pagedchat::ChatSession::Turn turn = (c.session.*plan)(*m_engine.engine, model, std::move(fit.chat));
    pagedchat::Request& request = turn.request;
    request.params = samplingParams(settings);
    request.n = std::clamp(settings.numSamples, 1, 8);
    if (!settings.columns.empty()) {
      request.n = static_cast<int>(std::min<size_t>(settings.columns.size(), 8));
      for (int i = 0; i < request.n; ++i) request.sample_params.push_back(samplingParams(settings.columns[static_cast<size_t>(i)]));
    }
    if (settings.beamSearch && request.n > 1 && settings.columns.empty()) {
      request.beam_width = request.n;
      request.park_when_done = false;  // the beams go at the end; the next turn is served by the prefix cache
    }
    if (tools) {
      // One reply, read as the tools' format says; a thinking model's grammar applies after its
      // thinking when the prompt opened it (else the grammar holds from the first token).
      request.n = 1;
      request.sample_params.clear();
      request.beam_width = 0;
      request.params.grammar = tools->grammar();
      const bool inside = model.chat_template().thinks() && pagedchat::prompt_opens_thinking(turn.prompt_text.str());
      tools->setBeginsInsideThinking(inside);
      if (inside && request.params.grammar) request.params.reasoning_end = std::string(pagedchat::kThinkClose);
    }
    // gpt-oss: its harmony channels reach the app as a <think> reply (harmony_reply.h); a tool
    // turn's ToolTurn reads them itself.
    c.harmony.clear();
    if (!tools && model.chat_template().harmony()) {
      const std::string continued = settings.continuesReply && !messages.isEmpty() ? messages.last().content.toStdString() : std::string();
      c.harmony.assign(static_cast<size_t>(request.n), HarmonyReplyText(continued));
    }
    c.tools = std::move(tools);
    // Tool results at the chat's end, appended to its parked sequence: the log names them.
    QStringList results;
    for (qsizetype k = messages.size() - 1; k >= 0 && messages[k].role == QLatin1String("tool"); --k) results.prepend(messages[k].toolName);
    const int64_t held = static_cast<int64_t>(turn.prompt_tokens.size());
    c.toolNote.reset();
    if (!results.isEmpty() && turn.num_submitted < held)
      c.toolNote = Chat::ToolResultNote{held - turn.num_submitted, held, results.join(QStringLiteral(", "))};
    const size_t n = static_cast<size_t>(request.n);
    c.numPromptTokens = turn.num_submitted;
    c.maxTokens.assign(n, request.params.max_tokens);
    for (size_t i = 0; i < n && i < request.sample_params.size(); ++i) c.maxTokens[i] = request.sample_params[i].max_tokens;
    c.sentBytes.assign(n, 0);
    c.reported.assign(n, false);
    const pagedchat::RequestId id = m_engine.engine->submit(request);
    m_tracker->track(id, static_cast<int>(n));
    c.session.turn_started(id, std::move(turn));
    m_requestChat[id] = chat;
    m_loop.wake();
  } catch (const pagedchat::ChatTemplateError& e) {
    refuse(tr("%1. Settings > Chat format > Built-in uses %2 instead.")
               .arg(QString::fromUtf8(e.what()), QString::fromStdString(m_chatModel.chat_template().builtin().describe())));
  } catch (const std::exception& e) {
    refuse(QString::fromUtf8(e.what()));
  }
}

void EngineBridge::stop(ChatId chat) {
  auto it = m_chats.find(chat);
  if (it == m_chats.end() || it->second.session.request() < 0 || !m_engine) return;
  m_engine.engine->abort(it->second.session.request());
  m_loop.wake();
}

void EngineBridge::fork(ChatId parent, ChatId child, const std::optional<ChatMessages>& messages) {
  Chat& c = m_chats[child];
  const auto chat = messages ? std::optional(toEngineMessages(*messages)) : std::nullopt;
  pagedchat::SequenceId seq = -1;
  try {
    const Chat& from = m_chats[parent];
    c.toolModel = from.toolModel;  // the child's turns render what the blocks it shares hold
    if (m_engine) seq = from.session.fork_into(*m_engine.engine, modelOf(from), c.session, chat);
  } catch (const pagedchat::ChatTemplateError&) {
    // The model's template refuses this chat: the fork shares nothing, and its first turn says why.
  }
  if (seq < 0) return emit forkDone(child, false, 0);
  m_pendingForks[seq] = child;
  m_loop.wake();  // the fork is a command the next step applies
}

std::vector<int32_t> EngineBridge::renderTokens(const pagedchat::ChatModel& model, const ChatMessages& messages,
                                                bool addGenerationPrompt) const {
  const std::vector<pagedchat::ChatMessage> chat = toEngineMessages(messages);
  try {
    return model.encode_chat(chat, addGenerationPrompt);
  } catch (const pagedchat::ChatTemplateError&) {
    return model.encode_prompt(model.chat_template().builtin().apply(chat, addGenerationPrompt));
  }
}

void EngineBridge::measure(ChatId chat, const ChatMessages& messages) {
  if (!m_engine) return;
  auto it = m_chats.find(chat);
  std::vector<int32_t> tokens = renderTokens(it == m_chats.end() ? m_chatModel : modelOf(it->second), messages, false);
  const auto count = static_cast<int>(tokens.size());
  if (m_engine.engine->stats().disk_tier && m_diskStrip.setHistory(chat, std::move(tokens))) scheduleDiskFrame();
  emit chatMeasured(chat, count, it == m_chats.end() ? 0 : blocksHeld(it->second));
}

// The chat's sequences: the parked ones, and while it replies its turn's (samples in flight).
std::vector<pagedchat::SequenceId> EngineBridge::sequencesOf(const Chat& c) const {
  std::vector<pagedchat::SequenceId> seqs = c.session.sequences();
  if (const pagedchat::RequestOutput* out = m_tracker ? m_tracker->output(c.session.request()) : nullptr)
    seqs.insert(seqs.end(), out->sequences.begin(), out->sequences.end());
  return seqs;
}

int EngineBridge::blocksHeld(const Chat& c) const {
  std::set<int32_t> blocks;
  for (const pagedchat::SequenceId seq : sequencesOf(c))
    if (const std::optional<pagedchat::SequenceView> view = m_engine.engine->sequence(seq)) blocks.insert(view->block_table.begin(), view->block_table.end());
  return static_cast<int>(blocks.size());
}

void EngineBridge::measureDraft(ChatId chat, const ChatMessages& messages, const QString& draft) {
  if (!m_engine) return;
  ChatMessages with = messages;
  with.append({QStringLiteral("user"), draft});
  auto it = m_chats.find(chat);
  const pagedchat::ChatModel& model = it == m_chats.end() ? m_chatModel : modelOf(it->second);
  const auto before = static_cast<int>(renderTokens(model, messages, false).size());
  const auto after = static_cast<int>(renderTokens(model, with, true).size());
  emit draftMeasured(chat, draft, std::max(0, after - before), after);
}

void EngineBridge::pickSample(ChatId chat, int index) {
  auto it = m_chats.find(chat);
  if (it == m_chats.end() || !m_engine) return;
  it->second.session.pick(*m_engine.engine, index);
  m_loop.wake();
}

void EngineBridge::release(ChatId chat) {
  if (m_diskStrip.setHistory(chat, {})) scheduleDiskFrame();
  auto it = m_chats.find(chat);
  if (it == m_chats.end()) return;
  const pagedchat::RequestId request = it->second.session.request();
  if (m_engine) it->second.session.release(*m_engine.engine);
  m_requestChat.erase(request);
  if (m_tracker) m_tracker->forget(request);
  m_chats.erase(it);
  m_loop.wake();
}


void EngineBridge::forgetOnDisk(const ChatMessages& gone, const QVector<ChatMessages>& others) {
  if (!m_engine || !m_engine.engine->stats().disk_tier) return;
  // Rendered as the history a next turn would start with (no generation prompt).
  auto tokens = [&](const ChatMessages& m) { return m_chatModel.encode_chat(toEngineMessages(m), false); };
  try {
    std::vector<std::vector<int32_t>> keep;
    for (const ChatMessages& m : others) keep.push_back(tokens(m));
    m_engine.engine->forget_on_disk(tokens(gone), keep);
  } catch (const std::exception&) {
    // A history the template cannot render (the chat's, or another's that may share its blocks):
    // nothing is dropped; the cap removes the blocks in time.
  }
}

void EngineBridge::setPaused(bool paused) { m_loop.set_paused(paused); }

void EngineBridge::stepOnce() {
  if (m_engine) stepAndReport();
}

bool EngineBridge::stepAndReport() {
  m_loop.step_once();
  afterStep(true);
  const bool events = m_frames.numPendingEvents() > 0;
  emitFrame(m_frames.describeStep(m_engine.engine->stats(), m_stepSampled));  // a frame per step: its own marks
  return events;
}

void EngineBridge::stepMany(int steps, bool untilKvEvent) {
  if (!m_engine) return;
  // The first step always runs: a fork or a release queued while paused is done inside a step.
  for (int i = 0; i < steps && (i == 0 || m_engine.engine->has_work()); ++i)
    if (stepAndReport() && untilKvEvent) return;
}

// The engine step threw: every chat's turn and API request in flight fails with the reason.
void EngineBridge::failAll(const std::string& why) {
  for (pagedchat::RequestId id : m_tracker->tracked()) {
    m_tracker->fail(id, why);
    m_engine.engine->abort(id);
  }
#ifdef PAGEDCHAT_HAVE_SERVER
  m_api->failAll(QStringLiteral("the forward pass failed: %1").arg(QString::fromStdString(why)));
#endif
}

// Inside step(), on the engine thread: the pool frames' KV events and fork confirmations.
void EngineBridge::onEvent(const pagedchat::EngineEvent& e) {
  using Kind = pagedchat::EngineEventKind;
  if (e.kind == Kind::token) ++m_stepSampled;
  const bool forkDone = e.kind == Kind::kv && e.kv.kind == pagedchat::KvEventKind::fork;
  const bool forkRefused = e.kind == Kind::error && e.request < 0;
  if (e.kind == Kind::kv) m_frames.onKvEvent(e.kv);
  if (!forkDone && !forkRefused) return;
  auto f = m_pendingForks.find(forkDone ? e.kv.seq : e.seq);
  if (f == m_pendingForks.end()) return;
  // A refused fork (the parent went away meanwhile): the child starts afresh.
  if (forkRefused) m_chats[f->second].session.fork_refused();
  m_forksDone.emplace_back(f->second, forkDone);
  m_pendingForks.erase(f);
}

void EngineBridge::afterStep(bool flushAll) {
  m_frames.onStep(m_engine.engine->last_step());
#ifdef PAGEDCHAT_HAVE_SERVER
  m_api->afterStep();
#endif
  deliver(flushAll);
}

void EngineBridge::noteToolResults() {
  const int64_t blockSize = m_engine.engine->block_size();
  for (auto& [id, c] : m_chats) {
    if (!c.toolNote) continue;
    const pagedchat::RequestOutput* out = m_tracker->output(c.session.request());
    if (!out || out->sequences.empty()) continue;
    const pagedchat::SequenceId seq = *out->sequences.begin();
    const std::optional<pagedchat::SequenceView> view = m_engine.engine->sequence(seq);
    if (!view || view->num_stored < c.toolNote->end) continue;  // not all stored yet (a chunked prefill)
    KvEventLine note;
    note.seq = seq;
    note.kind = pagedchat::KvEventKind::allocate;
    for (int64_t b = c.toolNote->start / blockSize; b <= (c.toolNote->end - 1) / blockSize && b < static_cast<int64_t>(view->block_table.size()); ++b)
      note.blocks.push_back(view->block_table[static_cast<size_t>(b)]);
    QStringList ids;
    for (int32_t b : note.blocks) ids << QStringLiteral("#%1").arg(b);
    note.text = tr(": tool result of %1, %2 tokens (with its markup), appended in %3 %4; the %5 tokens before it stay in "
                   "their blocks, not computed again.")
                    .arg(c.toolNote->tools)
                    .arg(c.toolNote->end - c.toolNote->start)
                    .arg(note.blocks.size() == 1 ? tr("block") : tr("blocks"), ids.join(QStringLiteral(", ")))
                    .arg(c.toolNote->start);
    m_frames.addNote(std::move(note));
    c.toolNote.reset();
  }
}

void EngineBridge::deliver(bool flushAll) {
  for (auto [child, shares] : std::exchange(m_forksDone, {})) emit forkDone(child, shares, m_chats[child].session.context_used());
  const bool flushText = flushAll || m_textClock.elapsed() >= kDisplayIntervalMs;
  if (flushText) m_textClock.restart();
  m_tracker->take_updates();  // the outputs below hold what the updates said
  noteToolResults();
  std::vector<ChatId> inFlight;  // deliverChat ends turns, which leave m_requestChat
  for (const auto& [request, id] : m_requestChat) inFlight.push_back(id);
  for (ChatId id : inFlight) deliverChat(id, m_chats[id], flushText);
}

void EngineBridge::deliverChat(ChatId id, Chat& c, bool flushText) {
  const pagedchat::RequestOutput* out = m_tracker->output(c.session.request());
  if (!out) return;
  for (size_t i = 0; i < out->samples.size() && i < c.sentBytes.size(); ++i) {
    const pagedchat::SampleOutput& s = out->samples[i];
    if (c.tools) {
      deliverToolSample(id, c, i, s, flushText);
      continue;
    }
    if ((flushText || s.finished) && s.text.size() > c.sentBytes[i]) {
      std::string piece = s.text.substr(c.sentBytes[i]);
      c.sentBytes[i] = s.text.size();
      if (i < c.harmony.size()) piece = c.harmony[i].push(piece);
      if (!piece.empty()) emit replyText(id, static_cast<int>(i), QString::fromStdString(piece));
    }
    if (!s.finished || c.reported[i]) continue;
    c.reported[i] = true;
    if (i < c.harmony.size())
      if (const std::string rest = c.harmony[i].finish(); !rest.empty()) emit replyText(id, static_cast<int>(i), QString::fromStdString(rest));
    ReplyMetrics m = ReplyMetrics::of(s, c.numPromptTokens, *out);
    // The engine says "length" for both limits: short of its max tokens, the reply met the context's end.
    if (m.finishReason == QLatin1String("length") && i < c.maxTokens.size() && m.numTokens < c.maxTokens[i])
      m.finishReason = ReplyMetrics::kContextEnd;
    emit replyFinished(id, static_cast<int>(i), m);
  }
  if (!out->done) return;
  const pagedchat::RequestOutput done = m_tracker->take_output(out->id);
  m_requestChat.erase(done.id);
  const int contextUsed = c.session.turn_ended(*m_engine.engine, done);
  if (c.toolReply) c.session.record_reply(*std::exchange(c.toolReply, std::nullopt));
  // The chat keeps a harmony reply in its <think> form: so it is held (a continue appends to it).
  else if (c.harmony.size() == 1) c.session.record_reply({"assistant", c.harmony[0].text()});
  c.harmony.clear();
  c.tools.reset();
  if (!done.ok()) emit replyFailed(id, QString::fromStdString(done.error));
  emit turnDone(id, contextUsed);
}

void EngineBridge::deliverToolSample(ChatId id, Chat& c, size_t i, const pagedchat::SampleOutput& s, bool flushText) {
  if (!flushText && !s.finished) return;
  // Decoded with special tokens written out: a model's call tags may be control tokens.
  const std::string reply = m_engine.model->tokenizer->decode(s.tokens, true);
  const QString shown = c.tools->shown(reply);
  if (shown.size() > static_cast<qsizetype>(c.sentBytes[i])) {
    emit replyText(id, static_cast<int>(i), shown.mid(static_cast<qsizetype>(c.sentBytes[i])));
    c.sentBytes[i] = static_cast<size_t>(shown.size());
  }
  if (!s.finished || c.reported[i]) return;
  c.reported[i] = true;
  const ToolTurn::Reply parsed = c.tools->parse(reply);
  pagedchat::ChatMessage read{"assistant", parsed.content.toStdString()};
  for (const ToolCallRecord& call : parsed.calls) read.tool_calls.push_back({call.id.toStdString(), call.name.toStdString(), call.arguments.toStdString()});
  c.toolReply = std::move(read);
  ReplyMetrics m = ReplyMetrics::of(s, c.numPromptTokens, *m_tracker->output(c.session.request()));
  if (m.finishReason == QLatin1String("length") && i < c.maxTokens.size() && m.numTokens < c.maxTokens[i])
    m.finishReason = ReplyMetrics::kContextEnd;
  if (!parsed.calls.isEmpty() && m.finishReason == QLatin1String("stop")) m.finishReason = ReplyMetrics::kToolCalls;
  emit replyToolCalls(id, static_cast<int>(i), parsed.content, parsed.calls);
  emit replyFinished(id, static_cast<int>(i), m);
  if (parsed.brokenCall) {
    // Shown as it was written would be a heap of JSON where the answer goes: said instead.
    const bool cut = m.finishReason == QLatin1String("length") || m.finishReason == ReplyMetrics::kContextEnd;
    emit replyFailed(id, (cut ? tr("The reply began a tool call and was cut at its length limit (%1 tokens) before the call ended. "
                                   "Raise the chat's max tokens, or send again.").arg(m.numTokens)
                              : tr("The reply began a tool call that does not parse. Send again, or ask differently.")) +
                             QStringLiteral("\n") + parsed.written.left(2000));
  }
}

void EngineBridge::sendFrame() { emitFrame(QString()); }

// A frame for the disk strip in DiskStrip::kMinRebuildMs, for an engine that may be idle by then
// (a restart's histories come in while nothing runs).
void EngineBridge::scheduleDiskFrame() {
  if (m_diskFrameDue) return;
  m_diskFrameDue = true;
  QTimer::singleShot(DiskStrip::kMinRebuildMs, this, [this] {
    m_diskFrameDue = false;
    if (m_engine) emitFrame(m_lastStepSummary);  // a paused pool keeps its step's words
  });
}

void EngineBridge::measureRoofline() {
  const auto* cpu = m_engine ? dynamic_cast<const pagedchat::CpuBackend*>(m_engine.backend.get()) : nullptr;
  if (!cpu) return emit rooflineMeasured(0, 0, 0);
  try {
    // A backend of the probe's own: the engine's pool is left as it is.
    pagedchat::CpuBackend probe(m_engine.model->weights, cpu->num_threads(), cpu->kv_type());
    const pagedchat::RooflineCeilings roof = pagedchat::measure_cpu_roofline(*m_engine.model, probe);
    emit rooflineMeasured(roof.peak_flops, roof.read_bandwidth, roof.threads);
  } catch (const std::exception&) {
    emit rooflineMeasured(0, 0, 0);  // no memory for the probe's backend: the chart says it was not measured
  }
}

void EngineBridge::emitFrame(const QString& stepSummary) {
  if (!m_engine) return;
  m_frameClock.restart();
  // Each sequence labelled with its chat: the parked one, the samples in flight or unpicked.
  std::unordered_map<pagedchat::SequenceId, ChatId> owner;
  for (const auto& [id, c] : m_chats)
    for (pagedchat::SequenceId seq : sequencesOf(c)) owner[seq] = id;
  auto label = [&](pagedchat::SequenceId seq) -> PoolFrameBuilder::Label {
    // A chat's: named on the UI thread, where its title lives (PoolControl).
    if (auto it = owner.find(seq); it != owner.end()) return {it->second, QString(), static_cast<int>(it->second % 1000)};
#ifdef PAGEDCHAT_HAVE_SERVER
    if (const pagedchat::RequestId api = m_api->requestOf(seq); api >= 0) return {-1, tr("API request %1").arg(api), kApiColorIndex};
#endif
    return {-1, tr("sequence %1").arg(seq), -1};
  };
  PoolFrame frame = m_frames.build(*m_engine.engine, label, stepSummary);
  // The strip changed too soon after its last build: one more frame once it may be rebuilt.
  if (m_diskStrip.fill(*m_engine.engine, !frame.events.empty(), frame)) scheduleDiskFrame();
  m_lastStepSummary = stepSummary;
  emit poolFrame(frame);
}
