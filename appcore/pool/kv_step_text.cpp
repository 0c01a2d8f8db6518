// Engine steps told in sentences: what each computed for which chat.
#include "appcore/pool/kv_step_text.h"

#include <QCoreApplication>
#include <QStringList>

using pagedchat::SequenceId;
using pagedchat::StepRecord;

namespace {
QString tr(const char* text) { return QCoreApplication::translate("KvStepTimeline", text); }

QString who(const std::function<QString(SequenceId)>& name, SequenceId seq) {
  const QString n = name ? name(seq) : QString();
  return n.isEmpty() ? tr("sequence %1").arg(seq) : n;
}
}  // namespace

bool isMixedStep(const StepRecord& step) {
  bool prompt = false, decode = false;
  for (const StepRecord::Chunk& c : step.chunks) (c.is_decode ? decode : prompt) = true;
  return prompt && decode;
}

QString describeStepRecord(const StepRecord& step, const std::function<QString(SequenceId)>& name) {
  QStringList parts;
  int32_t total = 0;
  for (const StepRecord::Chunk& c : step.chunks) {
    total += c.num_tokens;
    const QString w = who(name, c.seq);
    if (c.is_decode) parts << tr("%1's next token").arg(w);
    else if (c.num_recomputed == c.num_tokens)
      parts << tr("%1's tokens %2-%3 again (%4, dropped by its preemption)").arg(w).arg(c.start).arg(c.start + c.num_tokens - 1).arg(c.num_tokens);
    else
      parts << tr("%1's prompt, tokens %2-%3 (%4)").arg(w).arg(c.start).arg(c.start + c.num_tokens - 1).arg(c.num_tokens);
  }
  QString text;
  if (!step.chunks.empty())
    text = (step.chunks.size() == 1 ? tr("Step %1 computes %2 tokens: %3.") : tr("Step %1 computes %2 tokens in one forward pass: %3."))
               .arg(step.step_index)
               .arg(total)
               .arg(parts.join(QStringLiteral("; ")));
  else
    text = tr("Step %1 computes nothing.").arg(step.step_index);
  QStringList moves;
  for (SequenceId s : step.preempted) moves << tr("%1 is preempted (its blocks freed, to be recomputed)").arg(who(name, s));
  for (SequenceId s : step.swapped_out) moves << tr("%1 is swapped out to host memory").arg(who(name, s));
  for (SequenceId s : step.swapped_in) moves << tr("%1 is swapped back in").arg(who(name, s));
  if (!moves.isEmpty()) text += QLatin1Char(' ') + moves.join(QStringLiteral("; ")) + QLatin1Char('.');
  if (isMixedStep(step)) text += tr(" A prompt chunk and a decode share the pass: continuous batching.");
  return text;
}
