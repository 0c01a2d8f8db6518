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
  const int32_t total = step.num_tokens();
  for (const StepRecord::Chunk& c : step.chunks) {
    const QString w = who(name, c.seq);
    if (c.is_decode) parts << tr("%1's next token").arg(w);
    else if (c.num_recomputed == c.num_tokens)
      parts << tr("%1's tokens %2-%3 again (%4, dropped by its preemption)").arg(w).arg(c.start).arg(c.start + c.num_tokens - 1).arg(c.num_tokens);
    else
      parts << tr("%1's prompt, tokens %2-%3 (%4)").arg(w).arg(c.start).arg(c.start + c.num_tokens - 1).arg(c.num_tokens);
  }
  QString text;
  if (!step.chunks.empty())
    text = (step.chunks.size() == 1 ? tr("Step %1 computes %2: %3.") : tr("Step %1 computes %2 in one forward pass: %3."))
               .arg(step.step_index)
               .arg(total == 1 ? tr("1 token") : tr("%1 tokens").arg(total))
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

bool isComputeBound(const StepRecord& step, const pagedchat::RooflineCeilings& roof) {
  return roof.ridge() > 0 && step.cost.intensity() >= roof.ridge();
}

QString describeStepCost(const StepRecord& step, const pagedchat::RooflineCeilings& roof) {
  const pagedchat::StepCost& c = step.cost;
  if (step.chunks.empty() || c.bytes_read <= 0) return {};
  const double intensity = c.intensity(), seconds = step.forward_seconds;
  QString text = tr("%1 GFLOP over %2 MiB read: %3 FLOP per byte")
                     .arg(c.flops / 1e9, 0, 'f', 2)
                     .arg(c.bytes_read / 1048576.0, 0, 'f', 1)
                     .arg(intensity, 0, 'f', intensity < 10 ? 1 : 0);
  const bool measured = roof.ridge() > 0;
  if (measured)
    text += isComputeBound(step, roof)
                ? tr(", past this machine's ridge (%1): compute-bound.").arg(roof.ridge(), 0, 'f', 0)
                : tr(", short of this machine's ridge (%1): memory-bound.").arg(roof.ridge(), 0, 'f', 0);
  else
    text += QLatin1Char('.');
  if (seconds <= 0) return text;
  const double flopsPerSecond = c.flops / seconds;
  text += tr(" %1 ms: %2 GFLOP/s").arg(seconds * 1e3, 0, 'f', 1).arg(flopsPerSecond / 1e9, 0, 'f', 0);
  if (measured && isComputeBound(step, roof))
    text += tr(", %1% of the compute roof.").arg(100.0 * flopsPerSecond / roof.peak_flops, 0, 'f', 0);
  else if (measured)
    text += tr(", reading %1 GB/s: %2% of the %3 GB/s measured.")
                .arg(c.bytes_read / seconds / 1e9, 0, 'f', 1)
                .arg(100.0 * c.bytes_read / seconds / roof.read_bandwidth, 0, 'f', 0)
                .arg(roof.read_bandwidth / 1e9, 0, 'f', 1);
  else
    text += QLatin1Char('.');
  return text;
}
