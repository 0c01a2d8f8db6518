// Each lesson's scene, written as a user would set it up, awaited step by step (QCoro).
#include "ui/lessons/lesson_runner.h"

#include <QAction>
#include <QCheckBox>
#include <QCoreApplication>
#include <QPlainTextEdit>
#include <QSpinBox>

#include <qcoro/qcorosignal.h>

#include "ui/pool_panel/kv_event_text.h"
#include "ui/shell/main_window.h"

using pagedchat::KvEventKind;

namespace {
QString tr(const char* text) { return QCoreApplication::translate("LessonRunner", text); }
constexpr std::chrono::milliseconds kTurnTimeout{180000};
}  // namespace

LessonRunner::LessonRunner(MainWindow& window) : QObject(&window), m_window(window) {
  connect(&m_window, &MainWindow::poolFrame, this, &LessonRunner::onFrame);
}

const QVector<LessonInfo>& LessonRunner::lessons() {
  static const QVector<LessonInfo> all{
      {QStringLiteral("allocation"), tr("Blocks on demand"),
       tr("Chat A's prompt is about to be computed. Paged memory gives it blocks of 4 tokens as its tokens arrive, not a slab "
          "for its whole context: only its last block has empty slots. Press Next event."),
       KvEventKind::allocate},
      {QStringLiteral("fork"), tr("A fork shares its blocks, then copies on write"),
       tr("Chat B is a fork of Chat A: it holds every block of A (ref count 2), nothing copied. Its first new token goes into "
          "the shared, partly filled last block, which must be copied first. Press Next event."),
       KvEventKind::copy_on_write},
      {QStringLiteral("prefix"), tr("A shared system prompt through the prefix cache"),
       tr("Chat A has read the shared system prompt; Chat B starts with the same one. Its prompt's full blocks are found in "
          "the prefix cache and shared, not computed again. Press Next event."),
       KvEventKind::cache_hit}};
  return all;
}

void LessonRunner::start(const QString& id) {
  for (const LessonInfo& l : lessons())
    if (l.id == id) {
      m_current = &l;
      run(l, ++m_generation);  // eager: runs to its first co_await
      return;
    }
}

void LessonRunner::setState(State state, const QString& message) {
  m_state = state;
  emit stateChanged(state, message);
}

void LessonRunner::setPaused(bool paused) {
  QAction* pause = m_window.findChild<QAction*>(QStringLiteral("pauseEngine"));
  if (pause && pause->isChecked() != paused) pause->trigger();
}

QCoro::Task<bool> LessonRunner::prepare() {
  if (!m_window.settings().teachingPreset) {
    auto ready = qCoro(&m_window, &MainWindow::modelReady, kTurnTimeout);
    m_window.findChild<QAction*>(QStringLiteral("teachingPreset"))->trigger();  // reloads the model
    if (!co_await std::move(ready)) co_return false;
  }
  setPaused(true);
  co_return true;
}

void LessonRunner::sendPaused(const QString& text) {
  // One reply a turn, whatever the compare box was left at.
  if (auto* samples = m_window.findChild<QSpinBox*>(QStringLiteral("samples"))) samples->setValue(1);
  auto* input = m_window.findChild<QPlainTextEdit*>(QStringLiteral("input"));
  input->setPlainText(text);
  m_window.send();
}

QCoro::Task<bool> LessonRunner::replyFully(const QString& text) {
  auto done = qCoro(&m_window, &MainWindow::turnDone, kTurnTimeout);
  sendPaused(text);
  setPaused(false);
  const bool ended = (co_await std::move(done)).has_value();
  setPaused(true);
  co_return ended;
}

QCoro::Task<> LessonRunner::run(LessonInfo lesson, int generation) {
  QPointer<LessonRunner> self(this);
  m_counting = false;
  m_counts.fill(0);
  m_lastSentence.clear();
  setState(State::preparing, tr("Setting up “%1”…").arg(lesson.title));
  auto stale = [&] { return !self || generation != m_generation; };
  if (!co_await prepare() || stale()) {
    if (!stale()) setState(State::failed, tr("The teaching preset's model did not load."));
    co_return;
  }
  // A fresh scene: a turn still waiting from an earlier lesson (or the user) is stopped, so that
  // the steps show this lesson's events alone.
  for (const ChatId id : m_window.chatIds()) {
    if (!m_window.isReplying(id)) continue;
    auto ended = qCoro(&m_window, &MainWindow::turnDone, kTurnTimeout);
    m_window.selectChat(id);
    m_window.stop();
    m_window.stepEngine();  // paused: the abort is carried out in a step
    if (!co_await std::move(ended) || stale()) co_return;
  }
  // Greedy replies, the same every time, short questions that end quickly; room enough that a
  // reply ends by itself (a reply cut by its length is not continued by the next turn's text:
  // the fork would be prompted whole instead of shared).
  TurnSettings brief = m_window.settings().sampling;
  brief.temperature = 0;
  brief.maxTokens = 64;
  auto newChat = [&](const QString& title) {
    const ChatId id = m_window.newChat();
    m_window.renameChat(id, title);
    m_window.setChatSampling(id, brief);
    return id;
  };
  if (lesson.id == QLatin1String("allocation")) {
    newChat(tr("Chat A"));
    sendPaused(tr("Name three rivers of Europe."));
  } else if (lesson.id == QLatin1String("fork")) {
    const ChatId a = newChat(tr("Chat A"));
    // The copy-on-write needs a partly filled last block: another short turn while A's tokens
    // end on a block's edge.
    const QString questions[] = {tr("What is 2+2?"), tr("And 3+3?"), tr("And 4+4?")};
    for (const QString& q : questions) {
      if (!co_await replyFully(q) || stale()) co_return setState(State::failed, tr("Chat A's reply did not end."));
      if (m_window.contextUsed(a) % AppSettings::kTeachingBlockSize != 0) break;
    }
    const ChatId b = m_window.forkChat(a, static_cast<int>(m_window.chat(a)->messages.size()));
    m_window.renameChat(b, tr("Chat B"));
    // Paused, the fork itself is done in the next step: one step, so that B holds A's blocks
    // before its turn is sent (else the turn would be prompted whole, through the prefix cache).
    m_window.stepEngine();
    for (int wait = 0; wait < 100 && m_window.contextUsed(b) == 0; ++wait) {
      co_await qCoro(&m_window, &MainWindow::poolFrame, std::chrono::milliseconds(100));
      if (stale()) co_return;
    }
    sendPaused(tr("And in Spanish?"));
  } else if (lesson.id == QLatin1String("prefix")) {
    // Each chat's own system prompt, the same text (the user's shared prompt is left as it is).
    auto ownPrompt = [&] {
      m_window.findChild<QCheckBox*>(QStringLiteral("overrideSystemPrompt"))->setChecked(true);
      m_window.findChild<QPlainTextEdit*>(QStringLiteral("chatSystemPrompt"))
          ->setPlainText(tr("You are a patient teacher. Answer in one short sentence, with plain words, and never use lists."));
    };
    newChat(tr("Chat A"));
    ownPrompt();
    if (!co_await replyFully(tr("What is a river?")) || stale()) co_return setState(State::failed, tr("Chat A's reply did not end."));
    newChat(tr("Chat B"));
    ownPrompt();
    sendPaused(tr("What is a lake?"));
  }
  if (stale()) co_return;
  m_counting = true;
  setState(State::ready, lesson.intro);
}

void LessonRunner::onFrame(const PoolFrame& frame) {
  if (!m_counting || frame.events.empty()) return;
  for (const pagedchat::KvEvent& e : frame.events) ++m_counts[static_cast<size_t>(e.kind)];
  auto title = [&](pagedchat::SequenceId seq) {
    for (const PoolFrameSequence& s : frame.sequences)
      if (s.id == seq) return s.chatTitle;
    return QString();
  };
  QString key;  // the key event's sentence, when this frame has it
  for (const KvEventLine& line : narrateKvEvents(frame.events, title)) {
    m_lastSentence = tr("Step %1: %2").arg(frame.stepIndex).arg(line.text);
    if (m_current && line.kind == m_current->keyEvent && key.isEmpty()) key = m_lastSentence;
    emit sentence(m_lastSentence);
  }
  if (m_state == State::ready && !key.isEmpty()) {
    // The sentence left on screen is the lesson's: the key event, not what the step did after it.
    m_lastSentence = key;
    emit sentence(key);
    setState(State::reached, tr("That was the lesson's key event; step on to see what follows, or Run to end."));
  }
}
