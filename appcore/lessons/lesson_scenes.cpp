// Each lesson's scene, written as a user would set it up, awaited step by step (QCoro).
#include "appcore/lessons/lesson_runner.h"

#include <QCoreApplication>
#include <QFileInfo>

#include "appcore/lessons/next_signal.h"

#include "appcore/session/app_session.h"
#include "appcore/session/chat_controller.h"
#include "appcore/session/pool_control.h"
#include "engine/backend/kv_type.h"
#include "models/model_scan.h"
#include "models/model_summary.h"
#include "appcore/session/model_load.h"

using pagedchat::KvEventKind;

namespace {
// A story long enough that two of them outgrow a pool of one context. Two different stories:
// with the same one, B's blocks would match A's by content and come back from the prefix cache
// instead of from host memory.
const char* const kLongAsk = "Tell me a long story about a dragon who learns to read.";
const char* const kOtherLongAsk = "Tell me a long story about a lighthouse keeper and a lost ship.";
// A prompt of about a hundred tokens: several chunks of the teaching preset's 32.
const char* const kRiverSummary =
    "Summarise this in one sentence: The river rises in the hills as a spring, runs through a valley of farms and "
    "orchards, turns the wheels of three old mills, passes under a stone bridge built by the Romans, widens into a slow "
    "brown stream at the town, and at last meets the sea in a wide estuary full of birds, mud flats and small fishing "
    "boats.";
// Some 600 tokens of plain prose: past a 512-token sliding window before its end.
const char* const kLongPassage =
    "The lighthouse stood on a spit of black rock at the mouth of the bay, and for a hundred and forty years a keeper "
    "had climbed its hundred and twelve steps every evening to light the lamp. The first keepers burned whale oil, "
    "then colza oil pressed from rapeseed, then paraffin, and at last the station was wired for electricity, though "
    "the old brass burner was kept polished in a cupboard in case the cable from the town ever failed in a storm. "
    "Each keeper kept a log. The logs were bound in green cloth and stacked on shelves in the watch room, and anyone "
    "who read them in order would learn the weather of a century: the winter the bay froze from shore to shore, the "
    "summer of the great drought when the spring behind the cottage ran dry, the night in October when three fishing "
    "boats came home through a gale by the light of the lamp alone. The entries were short. Wind north-west, force "
    "seven. Lamp lit at sunset, extinguished at dawn. Schooner sighted at noon, bound south. Glass falling. Painted "
    "the gallery rail. Sometimes a keeper wrote more: a line about a daughter born in the spring, or a son gone to "
    "sea, or a dog that had followed him up the steps every night for eleven years and then one night did not. The "
    "last keeper was a woman named Ada Marsh, who came to the station as a girl of nineteen to help her father and "
    "stayed for forty-one years after he died. She mended the roof herself, grew potatoes and beans in the lee of the "
    "tower, and rowed across the bay once a week for flour, tea, lamp glass and the newspapers, which she read to the "
    "end, advertisements and all. When the light was automated she was offered a pension and a house in the town. She "
    "took the pension and refused the house, and for six more years she lived in the cottage beside the tower and "
    "climbed the steps each evening out of habit, to watch the lamp come on by itself. Visitors who found her there "
    "asked whether she missed the work. She said the work had never been the lamp. The work had been watching: the "
    "sea, the sky, the boats, the birds on the rocks at low tide, the way the light changed on the water before a "
    "storm. A machine could light a lamp, she said, but nobody had yet built one that could worry about a boat that "
    "was late. Her logs stop in the spring of the year she turned eighty-six. The final entry reads, in a steady hand: "
    "Wind south, light. Sea calm. All boats in. Then, below it, in the same hand, a last line that was not about the "
    "weather at all, and that the keepers who read the logs today always read twice before they close the book:";
}  // namespace

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
  } else if (lesson.id == QLatin1String("window")) {
    newSceneChat(chatA, brief);
    sendPaused(tr(kLongPassage));
  } else if (lesson.id == QLatin1String("kvtypes")) {
    co_return co_await kvTypesScene(lesson, brief, generation);
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
    co_await nextSignal(&m_session.pool(), &PoolControl::localFrame, std::chrono::milliseconds(100));
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

qint64 LessonRunner::kvBlockBytes(const QString& type) const {
  const ModelInfo& m = m_session.modelInfo();
  try {
    return AppSettings::kTeachingBlockSize *
           pagedchat::kv_token_bytes(pagedchat::parse_kv_type(type.toStdString()), m.layers, m.kvHeads, m.headDim);
  } catch (const std::exception&) {
    return 0;
  }
}

int LessonRunner::blocksInF32Memory(const LessonInfo& lesson, const QString& type) const {
  const qint64 bytes = kvBlockBytes(type);
  return bytes > 0 ? static_cast<int>(lesson.poolBlocks * kvBlockBytes(QStringLiteral("f32")) / bytes) : lesson.poolBlocks;
}

// The same question in f32 (the lesson's first engine), then in f16 and q8_0, each engine's pool
// the memory of the f32 one: the first two answered while the scene is set up, the third left to
// the class's steps.
QCoro::Task<bool> LessonRunner::kvTypesScene(const LessonInfo& lesson, TurnSettings brief, int generation) {
  QPointer<LessonRunner> self(this);
  auto stale = [&] { return !self || generation != m_generation; };
  const QString ask = tr("Name three rivers of Europe.");
  const QString types[] = {QStringLiteral("f32"), QStringLiteral("f16"), QStringLiteral("q8_0")};
  for (int i = 0; i < 3; ++i) {
    const int blocks = blocksInF32Memory(lesson, types[i]);
    if (i > 0) {
      const bool prepared = co_await prepare(lesson, types[i], blocks);
      if (stale()) co_return false;
      if (!prepared) {
        setState(State::failed, tr("The model did not load with %1 KV (q8_0 needs heads of a multiple of 32 numbers).").arg(types[i]));
        co_return false;
      }
    }
    const QString chat = tr("Chat A (%1)").arg(types[i]);
    KvTypeRun run;
    run.type = types[i];
    run.chat = chat;
    run.poolBlocks = blocks;
    run.blockBytes = kvBlockBytes(types[i]);
    m_kvRuns.push_back(run);
    newSceneChat(chat, brief);
    if (i == 2) break;
    const bool ended = co_await replyFully(ask);
    if (stale()) co_return false;
    if (!ended) co_return failedReply(chat);
  }
  sendPaused(ask);
  co_return true;
}

QString LessonRunner::slidingWindowModel() const {
  // The scene's text (some 600 tokens) passes a window of 512 at most.
  const auto fits = [](uint64_t window) { return window > 0 && window <= 512; };
  if (fits(m_session.modelInfo().slidingWindow) && m_session.modelLoad().currentPath() == userModel()) return userModel();
  // The model library's places and the recent models: the smallest with a window loads fastest.
  std::vector<pagedchat::models::ScanPlace> places = pagedchat::models::standard_places();
  for (const QString& f : m_session.modelLoad().recentModels())
    places.push_back({"Recent", f.toStdString(), pagedchat::models::PlaceLayout::kFile});
  QString best;
  uint64_t bestSize = 0;
  for (const pagedchat::models::FoundModel& found : pagedchat::models::scan_places(places)) {
    try {
      const pagedchat::models::ModelSummary m = pagedchat::models::summarize_model(found.path);
      if (!m.supported || !fits(m.sliding_window) || (!best.isEmpty() && m.file_size >= bestSize)) continue;
      best = QString::fromStdString(found.path);
      bestSize = m.file_size;
    } catch (const std::exception&) {
      // not a readable GGUF: not this lesson's model
    }
  }
  return best;
}
