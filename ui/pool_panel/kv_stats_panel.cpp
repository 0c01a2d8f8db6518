// The block-pool view's numbers, one label per row.
#include "ui/pool_panel/kv_stats_panel.h"

#include <QFormLayout>
#include <QLabel>
#include <QLocale>
#include <QVBoxLayout>

KvStatsPanel::KvStatsPanel(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("kvStatsPanel"));
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  auto* form = new QFormLayout;
  form->setContentsMargins(0, 0, 0, 0);
  form->setVerticalSpacing(1);
  // A row too long for the dock's width puts its value under its name rather than cutting either
  // (not word-wrapped values: in the scroll area those kept a one-line height and were cut).
  form->setRowWrapPolicy(QFormLayout::WrapLongRows);
  outer->addLayout(form);
  m_form = form;
  auto row = [&](const QString& key, const QString& title, const QString& counts) {
    auto* label = new QLabel(this);
    label->setToolTip(counts);
    label->setObjectName(QStringLiteral("kvStat_") + key);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* name = new QLabel(title, this);
    name->setToolTip(counts);  // what the number counts, on its name and on its value
    form->addRow(name, label);
    return label;
  };
  m_used = row(QStringLiteral("used"), tr("Used blocks"),
      tr("Blocks that at least one sequence holds now, of all the blocks in the pool."));
  m_cached = row(QStringLiteral("cached"), tr("Cached (evictable)"),
      tr("Blocks no sequence holds whose keys and values are kept for the prefix cache: a later prompt that starts the same way reuses them. The least recently used go first when memory is needed."));
  m_free = row(QStringLiteral("free"), tr("Free blocks"),
      tr("Blocks holding nothing, ready to be allocated."));
  m_tokens = row(QStringLiteral("tokens"), tr("Tokens stored"),
      tr("Tokens whose keys and values the blocks in use hold, and how many tokens one block holds."));
  m_memory = row(QStringLiteral("memory"), tr("Memory"),
      tr("Bytes of the blocks in use, of the whole pool, and one token's share (every layer's keys and values in the pool's element type)."));
  m_frag = row(QStringLiteral("fragmentation"), tr("Internal fragmentation"),
      tr("Slots allocated but empty: the unused end of each sequence's last, partial block. Paging wastes at most one partial block per sequence."));
  m_sharing = row(QStringLiteral("sharing"), tr("Saved by sharing"),
      tr("Blocks that would be needed if nothing were shared, less those in use: what forks, parallel samples and the prefix cache save. Shared: blocks held by more than one sequence."));
  m_hit = row(QStringLiteral("hitRate"), tr("Prefix hit rate"),
      tr("Of the prompt tokens looked up in the prefix cache, the share found there (not computed again); with a disk cache, those whose blocks were read back from disk besides."));
  m_preempt = row(QStringLiteral("preemptions"), tr("Preemptions"),
      tr("Sequences pushed out when memory ran short: by recompute (their blocks freed, their tokens computed again later) or by swap (their blocks copied to the host pool and back)."));
  m_tps = row(QStringLiteral("tokPerSec"), tr("Throughput"),
      tr("Tokens the engine computed a second over the last second: prompts and replies of every chat."));
  m_step = row(QStringLiteral("step"), tr("Step"),
      tr("Engine steps run since the model was loaded; with a host pool, how many of its blocks hold swapped-out sequences."));
  m_disk = row(QStringLiteral("disk"), tr("On disk"),
      tr("Full blocks kept on disk (Settings > Disk cache): a chat whose blocks left the pool, or that was open before a restart, reads them back instead of computing them again. Blocks read back and written since the model was loaded."));
  m_window = row(QStringLiteral("window"), tr("Sliding window"),
      tr("On the model's local layers a token sees only its last N positions. Blocks that every owner's window has left are dotted: only the global layers still read them, and the pool keeps them for those."));
  m_summary = new QLabel(this);
  m_summary->setObjectName(QStringLiteral("kvStat_summary"));
  m_summary->setWordWrap(true);
  m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
  outer->addWidget(m_summary);
  outer->addStretch(1);
  setNumbers({});
}

void KvStatsPanel::setNumbers(const KvPoolNumbers& n) {
  m_numbers = n;
  auto ofPool = [&](int32_t k) {
    return n.numBlocks ? tr("%1 / %2 (%3)").arg(k).arg(n.numBlocks).arg(kvPercent(static_cast<double>(k) / n.numBlocks))
                       : QString::number(k);
  };
  m_used->setText(ofPool(n.numUsed));
  m_cached->setText(ofPool(n.numCached));
  m_free->setText(ofPool(n.numFree));
  m_tokens->setText(tr("%1 in %2-token blocks").arg(n.tokensStored).arg(n.blockSize));
  // What the blocks in use cost, and a token's share: it follows the KV element type.
  if (n.bytesPerBlock && n.blockSize)
    m_memory->setText(tr("%1 of %2 (%3 a token)")
                          .arg(kvBytes(n.bytesPerBlock * static_cast<uint64_t>(n.numUsed)),
                               kvBytes(n.bytesPerBlock * static_cast<uint64_t>(n.numBlocks)),
                               kvBytes(n.bytesPerBlock / static_cast<uint64_t>(n.blockSize))));
  else
    m_memory->setText(tr("not known"));
  m_frag->setText(tr("%1 (%2 empty slots in partial blocks)").arg(kvPercent(n.fragmentation)).arg(n.emptySlots));
  QString sharing = (n.blocksSavedBySharing == 1 ? tr("1 block") : tr("%1 blocks").arg(n.blocksSavedBySharing)) +
                    tr(" (%1 shared)").arg(n.numSharedBlocks);
  if (n.bytesSavedBySharing) sharing += QStringLiteral(", ") + kvBytes(n.bytesSavedBySharing);
  m_sharing->setText(sharing);
  QString hit = tr("%1 (%2 of %3 prompt tokens)").arg(kvPercent(n.prefixHitRate)).arg(n.prefixHitTokens).arg(n.prefixLookupTokens);
  if (n.diskHitTokens > 0) hit += tr("; %1 more read from disk").arg(n.diskHitTokens);  // not in the cache's rate: they left memory
  m_hit->setText(hit);
  m_preempt->setText(tr("%1 recompute, %2 swap").arg(n.numPreemptions).arg(n.numSwapOuts));
  m_tps->setText(tr("%1 tok/s").arg(n.tokensPerSecond, 0, 'f', 1));
  QString step = QString::number(n.stepIndex);
  if (n.numHostBlocks) step += tr("  (host pool: %1 / %2 swapped)").arg(n.numSwappedBlocks).arg(n.numHostBlocks);
  m_step->setText(step);
  const PoolFrameWindow& w = n.slidingWindow;
  m_window->setText(tr("%1 tokens on %2 of %3 layers; %4 blocks outside it")
                        .arg(w.window).arg(w.numLocalLayers).arg(w.numLayers).arg(n.numOutsideWindow));
  m_form->setRowVisible(m_window, w.window > 0);
  m_disk->setText(tr("%1 blocks, %2 of %3; %4 read, %5 written%6")
                      .arg(QLocale().toString(n.numDiskFiles), kvBytes(n.diskBytes), kvBytes(n.diskMaxBytes))
                      .arg(n.numDiskReads)
                      .arg(n.numDiskWrites)
                      .arg(n.diskWriting ? QString() : tr(" (writing stopped: the disk is full)")));
  m_form->setRowVisible(m_disk, n.diskTier);
  m_summary->setText(n.lastStepSummary);
  m_summary->setVisible(!n.lastStepSummary.isEmpty());
}

QString KvStatsPanel::rowText(const QString& key) const {
  auto* label = findChild<QLabel*>(QStringLiteral("kvStat_") + key);
  return label ? label->text() : QString();
}
