// Each lesson's scene, written as a user would set it up, awaited step by step (QCoro).
#include "appcore/lessons/lesson_runner.h"

#include <QDir>

#include <QCoreApplication>

#include <algorithm>
#include <utility>

#include <qcoro/qcorosignal.h>
#include <qcoro/qcorotimer.h>

#include "appcore/chat/chat_database.h"
#include "appcore/pool/kv_event_text.h"
#include "appcore/pool/kv_layout_comparison.h"
#include "appcore/pool/kv_step_text.h"
#include "appcore/session/app_session.h"
#include "appcore/session/chat_controller.h"
#include "appcore/session/pool_control.h"

using pagedchat::KvEventKind;

namespace {
QString tr(const char* text) { return QCoreApplication::translate("LessonRunner", text); }
constexpr std::chrono::milliseconds kTurnTimeout{180000};

// A story long enough that two of them outgrow a pool of one context.
// Two different stories: with the same one, B's blocks would match A's by content and come back
// from the prefix cache instead of from host memory.
const QString kSceneChatsKey = QStringLiteral("lessons/scene_chats");  // ids of the scene's chats, space-separated
// The user's engine before the lesson: "preset blocks host_blocks speculation" (rememberUserEngine).
const QString kUserEngineKey = QStringLiteral("lessons/user_engine");
const char* const kLongAsk = "Tell me a long story about a dragon who learns to read.";
const char* const kOtherLongAsk = "Tell me a long story about a lighthouse keeper and a lost ship.";
// A prompt of about a hundred tokens: several chunks of the teaching preset's 32.
const char* const kRiverSummary =
    "Summarise this in one sentence: The river rises in the hills as a spring, runs through a valley of farms and "
    "orchards, turns the wheels of three old mills, passes under a stone bridge built by the Romans, widens into a slow "
    "brown stream at the town, and at last meets the sea in a wide estuary full of birds, mud flats and small fishing "
    "boats.";
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
  if (m_current && m_current->keyStep == LessonInfo::KeyStep::decodeAfterPrompt && isActive()) m_session.pool().step();
  else m_session.pool().stepToNextEvent();
}

void LessonRunner::rememberUserEngine() {
  const AppSettings& s = m_session.settings();
  m_session.database().setSetting(kUserEngineKey, QStringLiteral("%1 %2 %3 %4")
                                                      .arg(s.teachingPreset ? 1 : 0)
                                                      .arg(s.teachingBlocks)
                                                      .arg(s.teachingHostBlocks)
                                                      .arg(s.speculation));
}

void LessonRunner::restoreUserEngine() {
  const QStringList saved = m_session.database().setting(kUserEngineKey).split(QLatin1Char(' '), Qt::SkipEmptyParts);
  m_session.database().setSetting(kUserEngineKey, QString());
  if (saved.size() != 3 && saved.size() != 4) return;  // (3: saved before the lessons set speculation)
  AppSettings s = m_session.settings();
  s.teachingPreset = saved[0] == QLatin1String("1");
  s.teachingBlocks = saved[1].toInt();
  s.teachingHostBlocks = saved[2].toInt();
  if (saved.size() == 4) s.speculation = saved[3];
  m_session.applySettings(s);  // the model reloads with them (once a load under way has ended)
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

QCoro::Task<bool> LessonRunner::prepare(const LessonInfo& lesson) {
  // A fresh engine every time: the scene's block numbers are the same on each replay, and no
  // chat of an earlier lesson holds blocks that this one's pressure would have to reclaim.
  if (m_session.modelInfo().path.isEmpty()) co_return false;  // no model yet
  AppSettings s = m_session.settings();
  s.teachingPreset = true;
  s.teachingBlocks = lesson.poolBlocks;
  s.teachingHostBlocks = lesson.hostBlocks;
  s.teachingKvDisk = lesson.kvDisk;
  // Drafts only where they are the lesson: elsewhere their rewinds would crowd the story.
  s.speculation = lesson.speculates ? QStringLiteral("ngram") : QStringLiteral("off");
  // An empty disk at each start: the scene writes its blocks, then reads them back, replay after replay.
  if (lesson.kvDisk) QDir(AppSettings::kvDiskLessonFolder()).removeRecursively();
  auto ready = qCoro(&m_session, &AppSession::modelReady, kTurnTimeout);
  if (!m_session.loadFresh(s)) co_return false;  // the window shows the load as any other
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
  auto done = qCoro(&m_session.chats(), &ChatController::turnEnded, kTurnTimeout);
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
    auto frame = qCoro(&m_session.pool(), &PoolControl::localFrame, std::chrono::milliseconds(5000));
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
  m_roofline = {};
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
    if (!stale() && !m_remote) setState(State::failed, tr("The teaching preset's model did not load."));
    co_return;
  }
  if (lesson.measuresRoofline && !co_await measureRoofline()) co_return;
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
    auto ended = qCoro(&m_session.chats(), &ChatController::turnEnded, kTurnTimeout);
    m_session.chats().stop(id);
    m_session.pool().step();  // paused: the abort is carried out in a step
    if (!co_await std::move(ended) || !self) co_return false;
  }
  co_return true;
}

// Greedy replies, the same every time, short questions that end quickly; room enough that a
// reply ends by itself (a reply cut by its length is not continued by the next turn's text:
// the fork would be prompted whole instead of shared).
TurnSettings LessonRunner::briefTurns() const {
  TurnSettings brief = m_session.settings().sampling;
  brief.temperature = 0;
  brief.maxTokens = 64;
  return brief;
}

// The lesson's chats and turns, sent as a user would send them. False: it failed (said) or a
// new start made it stale.
QCoro::Task<bool> LessonRunner::setScene(const LessonInfo& lesson, int generation) {
  const TurnSettings brief = briefTurns();
  const QString chatA = tr("Chat A"), chatB = tr("Chat B"), chatC = tr("Chat C"), chatD = tr("Chat D");
  if (lesson.id == QLatin1String("allocation")) {
    newSceneChat(chatA, brief);
    sendPaused(tr("Name three rivers of Europe."));
  } else if (lesson.id == QLatin1String("contiguous")) {
    // Three of different lengths: a slab wastes most of each, the blocks only their last slots.
    newSceneChat(chatA, brief);
    sendPaused(tr("Hi!"));
    newSceneChat(chatB, brief);
    sendPaused(tr("Name three rivers of Europe."));
    newSceneChat(chatC, brief);
    sendPaused(tr("Explain in two sentences why the sky looks blue on a clear day and red at sunset."));
  } else if (lesson.id == QLatin1String("fork")) {
    co_return co_await forkScene(brief, generation);
  } else if (lesson.id == QLatin1String("prefix")) {
    co_return co_await prefixScene(brief, generation);
  } else if (lesson.id == QLatin1String("parallel")) {
    // Sampled (not greedy), so that the three differ; seeded, so that a replay shows the same.
    TurnSettings varied = brief;
    varied.temperature = 0.9;
    varied.seed = 7;
    newSceneChat(chatA, varied);
    sendPaused(tr("Give a name for a friendly robot."), 3);
  } else if (lesson.id == QLatin1String("eviction")) {
    co_return co_await evictionScene(brief, generation);
  } else if (lesson.id == QLatin1String("disk")) {
    co_return co_await diskScene(brief, generation);
  } else if (lesson.id == QLatin1String("recompute") || lesson.id == QLatin1String("swap")) {
    TurnSettings story = brief;
    story.maxTokens = 180;
    newSceneChat(chatA, story);
    sendPaused(tr(kLongAsk));
    newSceneChat(chatB, story);
    sendPaused(tr(kOtherLongAsk));
  } else if (lesson.id == QLatin1String("beams")) {
    newSceneChat(chatA, brief);
    sendPaused(tr("Complete the sentence: The best way to learn a language is"), 4, true);
  } else if (lesson.id == QLatin1String("prefill")) {
    TurnSettings shortAnswer = brief;
    shortAnswer.maxTokens = 24;
    newSceneChat(chatA, shortAnswer);
    sendPaused(tr(kRiverSummary));
  } else if (lesson.id == QLatin1String("speculative")) {
    newSceneChat(chatA, brief);
    sendPaused(tr("Repeat this sentence exactly, twice: The small red boat sailed past the old lighthouse at dawn, "
                  "and the fishermen on the pier waved their caps."));
  } else if (lesson.id == QLatin1String("batching")) {
    QPointer<LessonRunner> self(this);
    newSceneChat(chatA, brief);
    sendPaused(tr("Name three rivers of Europe and the seas they flow into."));
    const bool decoding = co_await stepUntilDecoding();
    if (!self || generation != m_generation) co_return false;
    if (!decoding) co_return failedReply(chatA);
    newSceneChat(chatB, brief);
    sendPaused(tr(kRiverSummary));
  }
  co_return true;
}

// The prefill/decode lesson's roofline, measured on the engine thread once the model is loaded
// (the engine paused, so nothing else runs meanwhile). False: it could not be measured (said).
QCoro::Task<bool> LessonRunner::measureRoofline() {
  QPointer<LessonRunner> self(this);
  setState(State::preparing, tr("Measuring this machine's memory bandwidth and compute…"));
  auto measured = qCoro(&m_session.pool(), &PoolControl::rooflineMeasured, kTurnTimeout);
  m_session.pool().measureRoofline();
  const auto roof = co_await std::move(measured);
  if (!self) co_return false;
  if (roof) m_roofline = *roof;
  if (m_roofline.ridge() > 0) co_return true;
  setState(State::failed, tr("This machine's roofline could not be measured (it is measured on the CPU backend only)."));
  co_return false;
}

// A step of a lesson told by steps: its sentence, the tallies, and the key sentence when it is
// the lesson's key step.
void LessonRunner::tellStep(const pagedchat::StepRecord& st, const std::function<QString(pagedchat::SequenceId)>& title,
                            QString& key) {
  QString line = describeStepRecord(st, title);
  const bool costs = m_current->keyStep == LessonInfo::KeyStep::decodeAfterPrompt;
  if (costs) line += QLatin1Char(' ') + describeStepCost(st, m_roofline);
  m_lastSentence = line;
  emit sentence(line);
  if (m_current->keyStep == LessonInfo::KeyStep::mixed && isMixedStep(st)) {
    ++m_mixedSteps;
    if (key.isEmpty()) key = line;
  }
  if (!costs || st.chunks.empty()) return;
  const bool decodes = std::all_of(st.chunks.begin(), st.chunks.end(), [](const auto& c) { return c.is_decode; });
  const bool prompts = std::none_of(st.chunks.begin(), st.chunks.end(), [](const auto& c) { return c.is_decode; });
  const bool computeBound = isComputeBound(st, m_roofline);
  if (prompts) {
    ++m_tally.prompt;
    m_tally.promptComputeBound += computeBound ? 1 : 0;
    auto tokens = [](const pagedchat::StepRecord& r) {
      int n = 0;
      for (const auto& c : r.chunks) n += c.num_tokens;
      return n;
    };
    if (tokens(st) >= tokens(m_fullestPromptStep)) m_fullestPromptStep = st;  // the fullest: the prompt's end may be a sliver
  } else if (decodes) {
    ++m_tally.decode;
    m_tally.decodeMemoryBound += computeBound ? 0 : 1;
    if (m_tally.prompt > 0 && key.isEmpty() && m_state == State::ready) {
      // The two regimes side by side: about the same bytes read, a thirtieth of the work.
      const pagedchat::StepRecord& p = m_fullestPromptStep;
      int promptTokens = 0;
      for (const auto& c : p.chunks) promptTokens += c.num_tokens;
      key = line + QLatin1Char(' ') +
            tr("Step %6 read %1 MiB to compute %2 prompt tokens in %3 ms; this one reads %4 MiB for one token in %5 "
               "ms. Every step pays for reading the weights; only a prompt has the tokens to keep the arithmetic busy while "
               "it does, which is why many chats decoding together cost little more than one.")
                .arg(p.cost.bytes_read / 1048576.0, 0, 'f', 1)
                .arg(promptTokens)
                .arg(p.forward_seconds * 1e3, 0, 'f', 1)
                .arg(st.cost.bytes_read / 1048576.0, 0, 'f', 1)
                .arg(st.forward_seconds * 1e3, 0, 'f', 1)
                .arg(p.step_index);
    }
  }
}

// Says that a scene chat's reply did not end; false, for co_return.
bool LessonRunner::failedReply(const QString& chat) {
  setState(State::failed, tr("%1's reply did not end.").arg(chat));
  return false;
}

QCoro::Task<bool> LessonRunner::forkScene(TurnSettings brief, int generation) {
  QPointer<LessonRunner> self(this);
  auto stale = [&] { return !self || generation != m_generation; };
  const QString chatA = tr("Chat A"), chatB = tr("Chat B");
  const ChatId a = newSceneChat(chatA, brief);
  // The copy-on-write needs a partly filled last block: another short turn while A's tokens
  // end on a block's edge.
  const QString questions[] = {tr("What is 2+2?"), tr("And 3+3?"), tr("And 4+4?")};
  for (const QString& q : questions) {
    const bool ended = co_await replyFully(q);
    if (stale()) co_return false;
    if (!ended) co_return failedReply(chatA);
    if (contextUsed(a) % AppSettings::kTeachingBlockSize != 0) break;
  }
  const ChatId b = m_session.chats().fork(a, static_cast<int>(m_session.chats().chat(a)->record.messages.size()));
  m_session.chats().rename(b, chatB);
  addToScene(chatB, b);
  // Paused, the fork itself is done in the next step: one step, so that B holds A's blocks
  // before its turn is sent (else the turn would be prompted whole, through the prefix cache).
  m_session.pool().step();
  for (int wait = 0; wait < 100 && contextUsed(b) == 0; ++wait) {
    co_await qCoro(&m_session.pool(), &PoolControl::localFrame, std::chrono::milliseconds(100));
    if (stale()) co_return false;
  }
  sendPaused(tr("And in Spanish?"));
  co_return true;
}

QCoro::Task<bool> LessonRunner::prefixScene(TurnSettings brief, int generation) {
  QPointer<LessonRunner> self(this);
  // Each chat's own system prompt, the same text (the user's shared prompt is left as it is).
  auto ownPrompt = [&] {
    m_session.chats().setChatSystemPrompt(
        m_sceneCurrent, true, tr("You are a patient teacher. Answer in one short sentence, with plain words, and never use lists."));
    m_session.chats().saveSystemPrompts(m_sceneCurrent);
  };
  newSceneChat(tr("Chat A"), brief);
  ownPrompt();
  const bool ended = co_await replyFully(tr("What is a river?"));
  if (!self || generation != m_generation) co_return false;
  if (!ended) co_return failedReply(tr("Chat A"));
  newSceneChat(tr("Chat B"), brief);
  ownPrompt();
  sendPaused(tr("What is a lake?"));
  co_return true;
}

QCoro::Task<bool> LessonRunner::evictionScene(TurnSettings brief, int generation) {
  QPointer<LessonRunner> self(this);
  // Earlier chats fill the pool, each parked with its blocks, until little is free.
  const QString asks[] = {tr("What is a river?"), tr("What is a mountain?"), tr("What is a forest?")};
  const QString names[] = {tr("Chat A"), tr("Chat B"), tr("Chat C")};
  for (int i = 0; i < 3 && (i < 2 || m_freeBlocks > 6); ++i) {
    newSceneChat(names[i], brief);
    const bool ended = co_await replyFully(asks[i]);
    if (!self || generation != m_generation) co_return false;
    if (!ended) co_return failedReply(names[i]);
  }
  newSceneChat(tr("Chat D"), brief);
  sendPaused(tr("Describe a desert in three sentences: the sand, the heat by day, and the cold at night."));
  co_return true;
}

// Chat A answers (its full blocks written to disk), then B, C and D fill the pool of 48: A is
// reclaimed and its own blocks evicted, least recently used first (the system prompt's, shared
// with the others, stay cached). A's next question is sent, paused: its history comes back from disk.
QCoro::Task<bool> LessonRunner::diskScene(TurnSettings brief, int generation) {
  QPointer<LessonRunner> self(this);
  const QString asks[] = {tr("What is a river?"), tr("What is a mountain?"), tr("What is a forest?"),
                          tr("Describe a desert in three sentences: the sand, the heat by day, and the cold at night.")};
  const QString names[] = {tr("Chat A"), tr("Chat B"), tr("Chat C"), tr("Chat D")};
  ChatId a = -1;
  for (int i = 0; i < 4; ++i) {
    const ChatId id = newSceneChat(names[i], brief);
    if (i == 0) a = id;
    const bool ended = co_await replyFully(asks[i]);
    if (!self || generation != m_generation) co_return false;
    if (!ended) co_return failedReply(names[i]);
  }
  m_sceneCurrent = a;
  emit chatShown(a);
  sendPaused(tr("And what is a lake?"));
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

void LessonRunner::onFrame(const PoolFrame& frame) {
  m_freeBlocks = 0;
  for (const pagedchat::KvBlockInfo& b : frame.snapshot.blocks) m_freeBlocks += b.state == pagedchat::BlockState::free;
  for (const pagedchat::StepRecord& st : frame.steps)
    for (const pagedchat::StepRecord::Chunk& c : st.chunks) m_lastStepDecoded = m_lastStepDecoded || c.is_decode;
  // A sequence this frame no longer lists (preempted, finished) keeps the name it had.
  for (const PoolFrameSequence& s : frame.sequences)
    if (!s.chatTitle.isEmpty()) m_titles[s.id] = s.chatTitle;
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
      const bool keyLine = m_current && line.kind == m_current->keyEvent &&
                           (m_current->keyChat.isEmpty() || title(line.seq) == m_current->keyChat);
      if (keyLine && key.isEmpty()) key = keySentence(frame, m_lastSentence);
      emit sentence(m_lastSentence);
    }
  }
  if (m_state == State::ready && !key.isEmpty()) {
    // The sentence left on screen is the lesson's: the key event, not what the step did after it.
    m_lastSentence = key;
    emit sentence(key);
    setState(State::reached, tr("That was the lesson's key event; step on to see what follows, or Run to end."));
  }
}
