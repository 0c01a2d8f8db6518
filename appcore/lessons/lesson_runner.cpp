// The lesson runner: a lesson's start and end, the user's engine kept aside, the engine set up
// and paused, and each frame told (the scenes: lesson_scenes.cpp; lessons told by steps:
// lesson_steps.cpp).
#include "appcore/lessons/lesson_runner.h"

#include <QDir>
#include <QFileInfo>

#include <QCoreApplication>

#include <algorithm>
#include <utility>

#include <qcoro/qcorotimer.h>

#include "appcore/chat/chat_database.h"
#include "appcore/lessons/next_signal.h"
#include "appcore/pool/kv_cell_model.h"
#include "appcore/pool/kv_event_text.h"
#include "appcore/pool/kv_layout_comparison.h"
#include "appcore/pool/kv_step_text.h"
#include "appcore/session/app_session.h"
#include "appcore/session/chat_controller.h"
#include "appcore/session/model_load.h"
#include "appcore/session/pool_control.h"

using pagedchat::KvEventKind;

namespace {
const QString kSceneChatsKey = QStringLiteral("lessons/scene_chats");  // ids of the scene's chats, space-separated
// The user's engine before the lesson: "preset blocks host_blocks speculation kv_type" (rememberUserEngine).
const QString kUserEngineKey = QStringLiteral("lessons/user_engine");
const QString kUserModelKey = QStringLiteral("lessons/user_model");  // the model in use before the lesson
}  // namespace

LessonRunner::LessonRunner(AppSession& session, QObject* parent) : QObject(parent), m_session(session) {
  PoolControl* pool = &m_session.pool();
  // The pool the lesson is told on: this machine's, or the watched server's.
  connect(pool, &PoolControl::localFrame, this, [this](const PoolFrame& f) {
    if (!m_remote) onFrame(f);
  });
  connect(pool, &PoolControl::remoteFrame, this, [this](const PoolFrame& f) {
    m_remotePool.step = f.stepIndex;
    m_remotePool.blockSize = f.snapshot.block_size;
    m_remotePool.numBlocks = static_cast<int>(f.snapshot.blocks.size());
    m_remotePool.numHostBlocks = static_cast<int>(f.snapshot.host_blocks.size());
    m_remotePool.numFree = static_cast<int>(std::count_if(f.snapshot.blocks.begin(), f.snapshot.blocks.end(),
                                                          [](const pagedchat::KvBlockInfo& b) { return b.state == pagedchat::BlockState::free; }));
    if (m_remote) onFrame(f);
  });
  connect(pool, &PoolControl::note, this, [this](const QString& sentence) { m_poolRefusal = sentence; });
  connect(&m_session.chats(), &ChatController::turnEnded, this, [this](ChatId id) {
    if (m_state != State::reached || !sceneChatTitle(id)) return;
    for (const auto& [name, chat] : m_sceneChats)
      if (isReplying(chat)) return;
    setState(State::finished, tr("The lesson's chats have all finished. Start again to replay it, or pick another lesson."));
    setPaused(false);  // nothing left to step: the user's own chats reply again
  });
  // A lesson told on a server's pool ends when the view leaves that pool (the pool control has
  // given the server its own pool back): its steps would step the pool shown instead.
  connect(pool, &PoolControl::shownChanged, this, [this] {
    if (!m_remote) return;
    m_remote = false;
    m_counting = false;
    ++m_generation;  // the run's awaits end without effect
    if (m_state == State::preparing || m_state == State::ready || m_state == State::reached)
      setState(State::idle, tr("The view left the server's pool, where “%1” was told: Start tells it on the pool shown now.")
                                .arg(m_current ? m_current->title : QString()));
  });
  connect(pool, &PoolControl::remoteRequestStarted, this, [this](ChatId id) {
    if (sceneChatTitle(id).has_value()) ++m_remoteTaken;
  });
}

bool LessonRunner::isReplying(ChatId id) const {
  const ChatController::Chat* c = m_session.chats().chat(id);
  return c && c->replying;
}

int LessonRunner::contextUsed(ChatId id) const {
  const ChatController::Chat* c = m_session.chats().chat(id);
  return c ? c->contextUsed : 0;
}

std::optional<QString> LessonRunner::sceneChatTitle(ChatId id) const {
  for (const auto& [name, chat] : m_sceneChats)
    if (chat == id) return name;
  return std::nullopt;
}

void LessonRunner::start(const QString& id) {
  for (const LessonInfo& l : lessons())
    if (l.id == id) {
      if (!isActive()) rememberUserEngine();
      m_current = &l;
      run(l, ++m_generation);  // eager: runs to its first co_await
      return;
    }
}

void LessonRunner::removeLeftoverScene() {
  for (const QString& id : m_session.database().setting(kSceneChatsKey).split(QLatin1Char(' '), Qt::SkipEmptyParts))
    m_session.chats().remove(id.toLongLong());
  m_session.database().setSetting(kSceneChatsKey, QString());
  if (!isActive()) restoreUserEngine();  // a start after a quit in the middle of a lesson
}

bool LessonRunner::isActive() const {
  return m_state == State::preparing || m_state == State::ready || m_state == State::reached || m_state == State::finished;
}

void LessonRunner::leave() {
  if (!isActive()) return;
  ++m_generation;  // the run's awaits end without effect
  m_counting = false;
  if (m_study) m_study->cancel();  // a quantization lesson left while it measures
  const bool remote = std::exchange(m_remote, false);
  const QString title = m_current ? m_current->title : QString();
  // Idle first: what the chats' going sets off (the window showing another chat) finds no lesson.
  setState(State::idle, tr("You left “%1”: its chats are gone, and the engine runs with your own settings again.").arg(title));
  // Its chats go (their turns in flight are stopped with them), then the user's engine.
  for (const auto& [name, id] : std::exchange(m_sceneChats, {})) m_session.chats().remove(id);
  m_session.database().setSetting(kSceneChatsKey, QString());
  if (remote) m_session.pool().resetWatchedPool(0, 0, 0, 0, 0);  // the server's own pool, once its turns end
  restoreUserEngine();
  setPaused(false);
}

void LessonRunner::nextEvent() {
  if (m_current && m_current->studiesQuantization && isActive()) showNextVariant();
  else if (m_current && m_current->keyStep == LessonInfo::KeyStep::decodeAfterPrompt && isActive()) m_session.pool().step();
  else m_session.pool().stepToNextEvent();
}

void LessonRunner::step(int n) {
  if (!(m_current && m_current->studiesQuantization && isActive())) return m_session.pool().step(n);
  for (int i = 0; i < n && m_state == State::ready; ++i) showNextVariant();
  if (n > 1) showNextVariant();  // Step ×10 shows them all, as Run to end does
}

void LessonRunner::runToEnd() {
  if (!(m_current && m_current->studiesQuantization && isActive())) return m_session.pool().setPaused(false);
  while (m_state == State::ready) showNextVariant();
  showNextVariant();  // reached: finished
}

void LessonRunner::rememberUserEngine() {
  const AppSettings& s = m_session.settings();
  m_session.database().setSetting(kUserEngineKey, QStringLiteral("%1 %2 %3 %4 %5")
                                                      .arg(s.teachingPreset ? 1 : 0)
                                                      .arg(s.teachingBlocks)
                                                      .arg(s.teachingHostBlocks)
                                                      .arg(s.speculation, s.kvType));
  m_session.database().setSetting(kUserModelKey, m_session.modelLoad().currentPath());
}

void LessonRunner::restoreUserEngine() {
  const QStringList saved = m_session.database().setting(kUserEngineKey).split(QLatin1Char(' '), Qt::SkipEmptyParts);
  m_session.database().setSetting(kUserEngineKey, QString());
  // (3 fields: saved before the lessons set speculation; 4: before they set the KV type)
  if (saved.size() < 3 || saved.size() > 5) return;
  AppSettings s = m_session.settings();
  s.teachingPreset = saved[0] == QLatin1String("1");
  s.teachingBlocks = saved[1].toInt();
  s.teachingHostBlocks = saved[2].toInt();
  if (saved.size() >= 4) s.speculation = saved[3];
  if (saved.size() == 5) s.kvType = saved[4];
  s.teachingBlockSize = AppSettings::kTeachingBlockSize;
  s.teachingContext = AppSettings::kTeachingContext;
  const QString model = m_session.database().setting(kUserModelKey);
  m_session.database().setSetting(kUserModelKey, QString());
  // The model reloads with them (once a load under way has ended), the user's own again where a
  // lesson loaded another.
  m_session.applySettings(s, QFileInfo::exists(model) ? model : QString());
}

QString LessonRunner::userModel() const {
  const QString saved = m_session.database().setting(kUserModelKey);
  return !saved.isEmpty() && QFileInfo::exists(saved) ? saved : m_session.modelLoad().currentPath();
}

QString LessonRunner::userKvType() const {
  const QStringList saved = m_session.database().setting(kUserEngineKey).split(QLatin1Char(' '), Qt::SkipEmptyParts);
  return saved.size() == 5 ? saved[4] : m_session.settings().kvType;
}

ChatId LessonRunner::sceneChat(const QString& title) const {
  for (const auto& [name, id] : m_sceneChats)
    if (name == title) return id;
  return -1;
}

void LessonRunner::setState(State state, const QString& message) {
  m_state = state;
  emit stateChanged(state, message);
}

void LessonRunner::setPaused(bool paused) { m_session.pool().setPaused(paused); }

QCoro::Task<bool> LessonRunner::prepare(const LessonInfo& lesson, const QString& kvType, int poolBlocks) {
  // A fresh engine every time: the scene's block numbers are the same on each replay, and no
  // chat of an earlier lesson holds blocks that this one's pressure would have to reclaim.
  if (m_session.modelInfo().path.isEmpty()) co_return false;  // no model yet
  AppSettings s = m_session.settings();
  s.teachingPreset = true;
  s.teachingBlocks = poolBlocks > 0 ? poolBlocks : lesson.poolBlocks;
  s.teachingBlockSize = lesson.blockSize > 0 ? lesson.blockSize : AppSettings::kTeachingBlockSize;
  s.teachingContext = lesson.context > 0 ? lesson.context : AppSettings::kTeachingContext;
  const QString model = lesson.slidingWindow ? slidingWindowModel() : userModel();
  if (model.isEmpty()) {
    setState(State::failed, tr("This lesson needs a model with a sliding window, such as Gemma 3 (gemma-3-270m is 240 MB): "
                               "get one in the model library, then start the lesson again."));
    co_return false;
  }
  s.kvType = !kvType.isEmpty() ? kvType : !lesson.kvType.isEmpty() ? lesson.kvType : userKvType();
  s.teachingHostBlocks = lesson.hostBlocks;
  s.teachingKvDisk = lesson.kvDisk;
  // Drafts only where they are the lesson: elsewhere their rewinds would crowd the story.
  s.speculation = lesson.speculates ? QStringLiteral("ngram") : QStringLiteral("off");
  // An empty disk at each start: the scene writes its blocks, then reads them back, replay after replay.
  if (lesson.kvDisk) QDir(AppSettings::kvDiskLessonFolder()).removeRecursively();
  auto ready = nextSignal(&m_session, &AppSession::modelReady, kTurnTimeout);
  if (!m_session.loadFresh(s, model)) co_return false;  // the window shows the load as any other
  if (!co_await std::move(ready)) co_return false;
  setPaused(true);
  co_return true;
}

void LessonRunner::sendPaused(const QString& text, int samples, bool beams) {
  // One reply a turn unless the lesson asks for more, whatever the compare box was left at; the
  // chat's own sampling (newSceneChat) wins over the app's.
  TurnSettings turn = m_session.settings().sampling;
  turn.numSamples = samples;
  turn.beamSearch = beams;
  turn.contextPolicy = m_session.settings().contextPolicy;
  m_session.chats().send(m_sceneCurrent, text, turn, {});
  if (m_remote) ++m_remoteSent;
}

QCoro::Task<bool> LessonRunner::replyFully(const QString& text) {
  QPointer<LessonRunner> self(this);
  auto done = nextSignal(&m_session.chats(), &ChatController::turnEnded, kTurnTimeout);
  sendPaused(text);
  setPaused(false);
  const bool ended = (co_await std::move(done)).has_value();
  if (!self) co_return false;
  setPaused(true);
  // A watched server has taken the pause before the scene's next turn is sent: that turn must
  // wait for the class's steps, not run (and hit the prefix cache, say) before the lesson counts.
  auto paused = std::make_shared<bool>(false);
  m_session.pool().afterSent([paused] { *paused = true; });
  for (int wait = 0; wait < 1000 && !*paused; ++wait) {
    co_await QCoro::sleepFor(std::chrono::milliseconds(10));
    if (!self) co_return false;
  }
  co_return ended && *paused;
}

QCoro::Task<bool> LessonRunner::stepUntilDecoding() {
  QPointer<LessonRunner> self(this);
  m_lastStepDecoded = false;
  for (int i = 0; i < 40 && self && !m_lastStepDecoded; ++i) {
    auto frame = nextSignal(&m_session.pool(), &PoolControl::localFrame, std::chrono::milliseconds(5000));
    m_session.pool().step();
    if (!co_await std::move(frame)) co_return false;
  }
  co_return self && m_lastStepDecoded;
}

QCoro::Task<> LessonRunner::run(LessonInfo lesson, int generation) {
  QPointer<LessonRunner> self(this);
  m_counting = false;
  m_counts.fill(0);
  m_mixedSteps = 0;
  m_tally = {};
  m_kvRuns.clear();
  m_windowedBlocks = 0;
  m_roofline = {};
  m_quantization.reset();
  m_quantizationShown = 0;
  emit quantizationShownChanged(nullptr, 0);
  m_fullestPromptStep = {};
  m_lastSentence.clear();
  m_sceneChats.clear();
  m_titles.clear();
  m_remoteSent = m_remoteTaken = 0;
  setState(State::preparing, tr("Setting up “%1”…").arg(lesson.title));
  // On the remote pool the view shows, where the lesson can be told there; else on this machine's.
  const QString watched = m_session.pool().watchedPool();
  m_remote = !watched.isEmpty() && lesson.onlyHere.isEmpty();
  const QString toldHere = !watched.isEmpty() && !m_remote ? tr("(Told on this machine's pool: %1.) ").arg(lesson.onlyHere) : QString();
  if (!m_remote) m_session.pool().watchPool(QString());
  auto stale = [&] { return !self || generation != m_generation; };
  if (!co_await stopReplies() || stale()) co_return;
  // The last lesson's chats go once their replies have ended (a server resets its pool only
  // while none of its requests runs).
  removeLeftoverScene();
  // Not a conditional expression around co_await: GCC 12 mishandles the temporaries of one.
  bool prepared = false;
  if (m_remote) prepared = co_await prepareRemote(lesson);
  else prepared = co_await prepare(lesson);
  if (!prepared || stale()) {
    if (!stale() && !m_remote && m_state != State::failed) setState(State::failed, tr("The teaching preset's model did not load."));
    co_return;
  }
  if (lesson.measuresRoofline && !co_await measureRoofline()) co_return;
  if (stale()) co_return;
  if (lesson.studiesQuantization && !co_await studyQuantization(generation)) co_return;
  if (stale()) co_return;
  emit sceneShown(static_cast<int>(lesson.history), lesson.id == QLatin1String("contiguous"));
  if (!co_await setScene(lesson, generation) || stale()) co_return;
  // Paused, a remote server holds the turns sent; the class steps once it has them all (and
  // named them: the frames call the chats as this app does).
  if (m_remote) {
    const bool taken = co_await remoteRequestsTaken();
    if (stale()) co_return;
    if (!taken) co_return setState(State::failed, tr("The server did not take the lesson's turns."));
  }
  // The scene's own steps may still be on their way in frames (queued, coalesced): counting
  // starts after a frame asked for now, which comes after all of them (a late one told "Step 4
  // computes 1 token" over the lesson's intro once, on a loaded machine).
  if (!m_remote) {
    auto flushed = nextSignal(&m_session.pool(), &PoolControl::localFrame, std::chrono::milliseconds(5000));
    m_session.pool().sendLocalFrame();
    co_await std::move(flushed);
    if (stale()) co_return;
  }
  m_counting = true;
  setState(State::ready, toldHere + lesson.intro);
}

// A fresh scene: a turn still running from an earlier lesson (or the user) is stopped first.
QCoro::Task<bool> LessonRunner::stopReplies() {
  QPointer<LessonRunner> self(this);
  QVector<ChatId> replying;
  for (const auto& [id, chat] : m_session.chats().chats())
    if (chat.replying) replying << id;
  for (const ChatId id : replying) {
    if (!isReplying(id)) continue;
    auto ended = nextSignal(&m_session.chats(), &ChatController::turnEnded, kTurnTimeout);
    m_session.chats().stop(id);
    m_session.pool().step();  // paused: the abort is carried out in a step
    if (!co_await std::move(ended) || !self) co_return false;
  }
  co_return true;
}

// A chat of the scene, named, sampling as the lesson says, on the watched server when the
// lesson is told there; shown, and the one the next turn goes to.
ChatId LessonRunner::newSceneChat(const QString& title, const TurnSettings& sampling) {
  ChatController& chats = m_session.chats();
  const ChatId id = chats.create();
  chats.rename(id, title);
  chats.setChatSampling(id, sampling);
  if (m_remote) chats.setRemoteEngine(id, m_remoteEngine);
  addToScene(title, id);
  return id;
}

// The scene's, also on disk: a quit in the middle of the lesson leaves none of its chats for
// the next start (removeLeftoverScene).
void LessonRunner::addToScene(const QString& title, ChatId id) {
  m_sceneChats.append({title, id});
  m_sceneCurrent = id;
  QStringList ids = m_session.database().setting(kSceneChatsKey).split(QLatin1Char(' '), Qt::SkipEmptyParts);
  ids << QString::number(id);
  m_session.database().setSetting(kSceneChatsKey, ids.join(QLatin1Char(' ')));
  emit chatShown(id);
}

QString LessonRunner::keySentence(const PoolFrame& frame, const QString& line) const {
  if (m_current && m_current->id == QLatin1String("contiguous")) {
    // The figures of the two bars, said with the event.
    const KvPoolNumbers n = computeKvPoolNumbers(frame);
    return line + QLatin1Char(' ') + kvContiguousCaption(computeLayoutComparison(frame), n) + QStringLiteral(". ") +
           kvPagedCaption(n) + QLatin1Char('.');
  }
  if (m_current && m_current->id == QLatin1String("kvtypes")) return kvTypesSentence(line);
  if (m_current && m_current->id == QLatin1String("window")) return windowSentence(frame, line);
  if (m_current && m_current->id == QLatin1String("beams")) {
    // "Chat A ends" would read as the reply's end: the sequence was one beam of several.
    int going = 0;
    for (const PoolFrameSequence& s : frame.sequences) going += s.chatTitle == tr("Chat A");
    return line + QLatin1Char(' ') +
           tr("That sequence was one of Chat A's beams, dropped because the others scored better; %1 beams go on.")
               .arg(going);
  }
  return line;
}

int LessonRunner::blocksOutsideWindow(const PoolFrame& frame) const {
  for (const PoolFrameSequence& s : frame.sequences)
    if (s.chatTitle == tr("Chat A"))
      return kvBlocksOutsideWindow(s.storedTokens(), frame.slidingWindow.window, frame.snapshot.block_size);
  return 0;
}

// The sliding-window lesson's key: the chat's first block wholly before the window, and why it
// stays in the pool.
QString LessonRunner::windowSentence(const PoolFrame& frame, const QString& line) const {
  const PoolFrameWindow& w = frame.slidingWindow;
  for (const PoolFrameSequence& s : frame.sequences) {
    if (s.chatTitle != tr("Chat A") || s.blockTable.empty()) continue;
    const int bs = frame.snapshot.block_size, out = blocksOutsideWindow(frame);
    return line + QLatin1Char(' ') +
           tr("Chat A now holds %1 tokens, and its newest token's local layers see only the last %2: %3 wholly "
              "before that window. On %4 of the model's %5 layers no token of this chat will read them again; the %6 "
              "global layers still do, so they stay in the pool: one block holds every layer's keys and values for its "
              "tokens. A pool for each kind of layer (vLLM's hybrid allocator) could give the local layers' %4/%5 of "
              "them back.")
               .arg(s.storedTokens())
               .arg(w.window)
               .arg(out == 1 ? tr("its block #%1 (tokens 0-%2) lies").arg(s.blockTable.front()).arg(bs - 1)
                             : tr("its first %1 blocks (from #%2, tokens 0-%3) lie").arg(out).arg(s.blockTable.front()).arg(out * bs - 1))
               .arg(w.numLocalLayers)
               .arg(w.numLayers)
               .arg(w.numLayers - w.numLocalLayers);
  }
  return line;
}

// The KV types lesson's key: the three runs side by side, their memory and their tokens.
QString LessonRunner::kvTypesSentence(const QString& line) const {
  if (m_kvRuns.size() != 3) return line;
  const KvTypeRun &f32 = m_kvRuns[0], &f16 = m_kvRuns[1], &q8 = m_kvRuns[2];
  auto kib = [](qint64 bytes) { return QString::number(bytes / 1024.0, 'f', 1); };
  // Where a run's tokens part from f32's (the prompt is the same: they part in the reply, if at all).
  auto against = [&](const KvTypeRun& r) {
    size_t same = 0;
    while (same < r.tokens.size() && same < f32.tokens.size() && r.tokens[same] == f32.tokens[same]) ++same;
    if (same == r.tokens.size() && same == f32.tokens.size())
      return tr("%1's %2 tokens are f32's, token for token").arg(r.type).arg(r.tokens.size());
    return tr("%1's tokens are f32's up to token %2 of %3, then its reply goes its own way").arg(r.type).arg(same).arg(r.tokens.size());
  };
  return line + QLatin1Char(' ') +
         tr("It holds %1 blocks for its %2 tokens; the f32 and f16 runs held %3 and %4. A block of %5 tokens takes %6 KiB "
            "in f32, %7 KiB in f16 and %8 KiB in q8_0 (a byte a number, with a 2-byte scale for each 32), so the same "
            "%9 MiB of pool holds %10, %11 and %12 blocks. %13; %14.")
             .arg(q8.blocksHeld)
             .arg(q8.tokens.size())
             .arg(f32.blocksHeld)
             .arg(f16.blocksHeld)
             .arg(AppSettings::kTeachingBlockSize)
             .arg(kib(f32.blockBytes), kib(f16.blockBytes), kib(q8.blockBytes))
             .arg(f32.poolBlocks * f32.blockBytes / 1048576.0, 0, 'f', 1)
             .arg(f32.poolBlocks)
             .arg(f16.poolBlocks)
             .arg(q8.poolBlocks)
             .arg(against(f16), against(q8));
}

void LessonRunner::onFrame(const PoolFrame& frame) {
  m_freeBlocks = 0;
  for (const pagedchat::KvBlockInfo& b : frame.snapshot.blocks) m_freeBlocks += b.state == pagedchat::BlockState::free;
  for (const pagedchat::StepRecord& st : frame.steps)
    for (const pagedchat::StepRecord::Chunk& c : st.chunks) m_lastStepDecoded = m_lastStepDecoded || c.is_decode;
  // A sequence this frame no longer lists (preempted, finished) keeps the name it had.
  for (const PoolFrameSequence& s : frame.sequences)
    if (!s.chatTitle.isEmpty()) m_titles[s.id] = s.chatTitle;
  // The KV types lesson's chats, as each engine's frames last showed them.
  for (KvTypeRun& run : m_kvRuns)
    for (const PoolFrameSequence& s : frame.sequences)
      if (s.chatTitle == run.chat) run.tokens = s.tokens, run.blocksHeld = static_cast<int>(s.blockTable.size());
  if (!m_counting) return;
  auto title = [&](pagedchat::SequenceId seq) { return m_titles.value(seq); };
  QString key;  // the key event's sentence, when this frame has it
  const bool bySteps = m_current && m_current->keyStep != LessonInfo::KeyStep::none;
  if (bySteps)
    for (const pagedchat::StepRecord& st : frame.steps) tellStep(st, title, key);
  for (const pagedchat::KvEvent& e : frame.events) ++m_counts[static_cast<size_t>(e.kind)];
  if (!frame.events.empty() && !bySteps) {
    for (const KvEventLine& line : narrateKvEvents(frame.events, title)) {
      m_lastSentence = tr("Step %1: %2").arg(frame.stepIndex).arg(line.text);
      const bool keyLine = m_current && !m_current->keyIsWindowEdge && line.kind == m_current->keyEvent &&
                           (m_current->keyChat.isEmpty() || title(line.seq) == m_current->keyChat);
      if (keyLine && key.isEmpty()) key = keySentence(frame, m_lastSentence);
      emit sentence(m_lastSentence);
    }
  }
  if (m_current && m_current->keyIsWindowEdge) {
    const int outside = blocksOutsideWindow(frame);
    if (outside > m_windowedBlocks && key.isEmpty()) key = windowSentence(frame, m_lastSentence);
    m_windowedBlocks = outside;
  }
  if (m_state == State::ready && !key.isEmpty()) {
    // The sentence left on screen is the lesson's: the key event, not what the step did after it.
    m_lastSentence = key;
    emit sentence(key);
    setState(State::reached, tr("That was the lesson's key event; step on to see what follows, or Run to end."));
  }
}
