// The lessons told by their steps rather than by KV events: continuous batching (a prompt chunk
// beside a decode) and prefill against decode (each step's cost on this machine's roofline).
#include "appcore/lessons/lesson_runner.h"

#include <QCoreApplication>

#include <algorithm>

#include "appcore/lessons/next_signal.h"
#include "appcore/session/app_session.h"
#include "appcore/pool/kv_step_text.h"
#include "appcore/session/pool_control.h"

using pagedchat::KvEventKind;

// The prefill/decode lesson's roofline, measured on the engine thread once the model is loaded
// (the engine paused, so nothing else runs meanwhile). False: it could not be measured (said).
QCoro::Task<bool> LessonRunner::measureRoofline() {
  QPointer<LessonRunner> self(this);
  setState(State::preparing, tr("Measuring this machine's memory bandwidth and compute…"));
  auto measured = nextSignal(&m_session.pool(), &PoolControl::rooflineMeasured, kTurnTimeout);
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
    if (st.num_tokens() >= m_fullestPromptStep.num_tokens()) m_fullestPromptStep = st;  // the fullest: the prompt's end may be a sliver
  } else if (decodes) {
    ++m_tally.decode;
    m_tally.decodeMemoryBound += computeBound ? 0 : 1;
    if (m_tally.prompt > 0 && key.isEmpty() && m_state == State::ready) {
      // The two regimes side by side: about the same bytes read, a thirtieth of the work.
      const pagedchat::StepRecord& p = m_fullestPromptStep;
      key = line + QLatin1Char(' ') +
            tr("Step %6 read %1 MiB to compute %2 prompt tokens in %3 ms; this one reads %4 MiB for one token in %5 "
               "ms. Every step pays for reading the weights; only a prompt has the tokens to keep the arithmetic busy while "
               "it does, which is why many chats decoding together cost little more than one.%7")
                .arg(p.cost.bytes_read / 1048576.0, 0, 'f', 1)
                .arg(p.num_tokens())
                .arg(p.forward_seconds * 1e3, 0, 'f', 1)
                .arg(st.cost.bytes_read / 1048576.0, 0, 'f', 1)
                .arg(st.forward_seconds * 1e3, 0, 'f', 1)
                .arg(p.step_index)
                .arg(p.chunks.size() == 1 && p.chunks.front().num_logits == 0
                         ? tr(" (That prompt step took no logits, so it did not read the output matrix.)")
                         : QString());
    }
  }
}
