// Runs of events of one kind, one sequence and (for frees) one outcome become one line.
#include "appcore/pool/kv_event_text.h"

#include <QCoreApplication>
#include <QStringList>

using pagedchat::BlockState;
using pagedchat::KvEvent;
using pagedchat::KvEventKind;

namespace {
QString tr(const char* text) { return QCoreApplication::translate("KvEventText", text); }

QString blockList(const std::vector<int32_t>& blocks, const char* prefix) {
  QStringList ids;
  const size_t shown = std::min<size_t>(blocks.size(), 12);
  for (size_t i = 0; i < shown; ++i) ids << QStringLiteral("%1%2").arg(QLatin1String(prefix)).arg(blocks[i]);
  QString text = ids.join(QStringLiteral(", "));
  if (blocks.size() > shown) text += tr(" and %1 more").arg(blocks.size() - shown);
  return text;
}

// "block #3" or "blocks #3, #4"
QString blocks(const std::vector<int32_t>& ids, const char* prefix = "#") {
  return (ids.size() == 1 ? tr("block %1") : tr("blocks %1")).arg(blockList(ids, prefix));
}

bool sameRun(const KvEvent& a, const KvEvent& b) {
  return a.kind == b.kind && a.seq == b.seq && (a.kind != KvEventKind::free || a.block_state == b.block_state);
}

QString sentence(const std::vector<KvEvent>& run, const KvEventLine& line, const QString& who) {
  const KvEvent& e = run.front();
  const int n = static_cast<int>(run.size());
  switch (e.kind) {
    case KvEventKind::allocate:
      return tr("%1 gets %2, fresh, for its next tokens (allocated on demand: only a last block can have empty slots).")
          .arg(who, blocks(line.blocks));
    case KvEventKind::share:
      return tr("%1 shares %2 with the sequence it was forked from: one more reference each (ref count %3), nothing copied.")
          .arg(who, blocks(line.blocks)).arg(run.back().ref_count);
    case KvEventKind::cache_hit:
      return tr("%1's prompt finds %2 in the prefix cache (ref count now %3): the tokens of %4 are not computed again.")
          .arg(who, blocks(line.blocks)).arg(run.back().ref_count).arg(n == 1 ? tr("a block") : tr("%1 blocks").arg(n));
    case KvEventKind::copy_on_write: {
      std::vector<int32_t> fresh;
      for (const KvEvent& c : run) fresh.push_back(static_cast<int32_t>(c.peer));
      return tr("%1 writes into shared %2: it gets its own copy (%3) first (copy-on-write); the original stays with its other owners.")
          .arg(who, blocks(line.blocks), blockList(fresh, "#"));
    }
    case KvEventKind::free:
      if (e.block < 0) return tr("%1 lets go of host %2.").arg(who, blocks(line.hostBlocks, "h"));
      if (e.block_state == BlockState::in_use)
        return tr("%1 lets go of %2; still in use by other sequences (ref count %3).").arg(who, blocks(line.blocks)).arg(run.back().ref_count);
      if (e.block_state == BlockState::cached)
        return tr("%1 lets go of %2; kept as cached, for a later prompt that starts the same way.").arg(who, blocks(line.blocks));
      return tr("%1 lets go of %2; free again.").arg(who, blocks(line.blocks));
    case KvEventKind::evict:
      return tr("Cached %1 evicted (least recently used first) to make room: the pool was out of free blocks.").arg(blocks(line.blocks));
    case KvEventKind::swap_out:
      return tr("%1's %2 copied to host %3 (swapped out) and freed on the device.")
          .arg(who, blocks(line.blocks), blocks(line.hostBlocks, "h"));
    case KvEventKind::swap_in:
      return tr("%1's host %2 copied back into device %3 (swapped in): nothing is recomputed.")
          .arg(who, blocks(line.hostBlocks, "h"), blocks(line.blocks));
    case KvEventKind::fork:
      return tr("%1 is forked from sequence %2: it shares every block of it, nothing is copied yet.").arg(who).arg(e.peer);
    case KvEventKind::park:
      return tr("%1 is parked between turns: its blocks stay, so its next turn computes only what it adds.").arg(who);
    case KvEventKind::resume:
      return tr("%1 runs again from its parked blocks.").arg(who);
    case KvEventKind::reclaim:
      return tr("%1's parked blocks are reclaimed for others under memory pressure (its full blocks stay cached).").arg(who);
    case KvEventKind::preempt:
      return tr("%1 is preempted: memory ran short, its blocks are freed and its tokens will be computed again (recompute).").arg(who);
    case KvEventKind::finish:
      return tr("%1 ends: its blocks are let go.").arg(who);
    case KvEventKind::rewind:
      return tr("%1 is cut back to %2 tokens; its blocks past the cut are let go.").arg(who).arg(e.peer);
    case KvEventKind::disk_read:
      return tr("%1's prompt finds %2 on disk: read back into the pool, the tokens of %3 are not computed again.")
          .arg(who, blocks(line.blocks), n == 1 ? tr("a block") : tr("%1 blocks").arg(n));
    case KvEventKind::disk_write:
      return tr("Full %1 written to disk: a later prompt that starts the same way reads it back, even after a restart.")
          .arg(blocks(line.blocks));
  }
  return {};
}
}  // namespace

// What a vLLM cache's events say, and no more (docs/DESIGN.md: no block ids, no requests).
QString vllmSentence(const KvEventLine& line, const QString& who) {
  if (line.kind == KvEventKind::allocate)
    return tr("%1: %2 stored in vLLM's prefix cache (full blocks, by their hash).").arg(who, blocks(line.blocks));
  return tr("%1 removed from vLLM's cache (evicted, or the cache reset).").arg(blocks(line.blocks));
}

std::vector<KvEventLine> narrateKvEvents(const std::vector<KvEvent>& events,
                                         const std::function<QString(pagedchat::SequenceId)>& name, bool vllmCache) {
  std::vector<KvEventLine> lines;
  for (size_t i = 0; i < events.size();) {
    size_t j = i + 1;
    while (j < events.size() && sameRun(events[i], events[j])) ++j;
    const std::vector<KvEvent> run(events.begin() + static_cast<std::ptrdiff_t>(i), events.begin() + static_cast<std::ptrdiff_t>(j));
    KvEventLine line;
    line.kind = run.front().kind;
    line.seq = run.front().seq;
    for (const KvEvent& e : run) {
      if (e.block >= 0) line.blocks.push_back(e.block);
      const bool hostPeer = e.kind == KvEventKind::swap_out || e.kind == KvEventKind::swap_in || (e.kind == KvEventKind::free && e.block < 0);
      if (hostPeer && e.peer >= 0) line.hostBlocks.push_back(static_cast<int32_t>(e.peer));
      if (e.kind == KvEventKind::copy_on_write && e.peer >= 0) line.blocks.push_back(static_cast<int32_t>(e.peer));
    }
    // The copy-on-write's own sentence names the originals; its line marks both.
    std::vector<int32_t> named = line.blocks;
    if (line.kind == KvEventKind::copy_on_write) {
      named.clear();
      for (const KvEvent& e : run) named.push_back(e.block);
    }
    KvEventLine forText = line;
    forText.blocks = named;
    QString who = line.seq >= 0 ? name(line.seq) : QString();
    if (who.isEmpty() && line.seq >= 0) who = tr("Sequence %1").arg(line.seq);
    line.text = vllmCache ? vllmSentence(forText, who) : sentence(run, forText, who);
    if (!line.text.isEmpty()) lines.push_back(std::move(line));
    i = j;
  }
  return lines;
}
