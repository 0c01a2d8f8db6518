// The block-pool view's live numbers.
#include "appcore/pool/kv_pool_numbers.h"

#include "appcore/pool/kv_cell_model.h"

#include <QLocale>

#include <algorithm>

using namespace pagedchat;

KvPoolNumbers computeKvPoolNumbers(const PoolFrame& frame) {
  KvPoolNumbers n;
  const KvSnapshot& snap = frame.snapshot;
  n.slidingWindow = frame.slidingWindow;
  if (frame.slidingWindow.window > 0)
    for (const KvCell& c : buildKvCellModel(frame).cells) n.numOutsideWindow += c.outsideWindow ? 1 : 0;
  n.blockSize = snap.block_size;
  n.numBlocks = static_cast<int32_t>(snap.blocks.size());
  n.numHostBlocks = static_cast<int32_t>(snap.host_blocks.size());
  for (const KvBlockInfo& b : snap.blocks) {
    switch (b.state) {
      case BlockState::free: ++n.numFree; break;
      case BlockState::cached: ++n.numCached; break;
      case BlockState::in_use:
      case BlockState::swapped: break;
    }
    if (b.ref_count < 1) continue;
    ++n.numUsed;
    n.tokensStored += b.num_filled;
    n.emptySlots += snap.block_size - b.num_filled;
    if (b.ref_count > 1) {
      ++n.numSharedBlocks;
      n.blocksSavedBySharing += b.ref_count - 1;
    }
  }
  for (const KvBlockInfo& h : snap.host_blocks) n.numSwappedBlocks += h.state == BlockState::swapped;
  n.pagedSlots = static_cast<int64_t>(n.numUsed) * snap.block_size;
  n.fragmentation = n.pagedSlots ? static_cast<double>(n.emptySlots) / n.pagedSlots : 0.0;
  n.pagedWaste = n.fragmentation;

  const KvStats& kv = frame.stats.kv;
  n.bytesSavedBySharing = kv.bytes_saved_by_sharing;
  n.bytesPerBlock = kv.bytes_per_block;
  n.prefixLookupTokens = kv.prefix_lookup_tokens;
  n.prefixHitTokens = kv.prefix_hit_tokens;
  n.prefixHitRate = kv.prefix_hit_rate();
  n.numPreemptions = kv.num_preemptions;
  n.numSwapOuts = kv.num_swap_outs;
  n.tokensPerSecond = frame.tokensPerSecond;
  n.stepIndex = frame.stepIndex;
  n.lastStepSummary = frame.lastStepSummary;
  n.diskTier = frame.stats.disk_tier;
  n.numDiskFiles = frame.stats.disk.num_files;
  n.diskBytes = frame.stats.disk.bytes;
  n.diskMaxBytes = frame.stats.disk.max_bytes;
  n.numDiskReads = kv.num_disk_reads;
  n.diskHitTokens = kv.disk_hit_tokens;
  n.numDiskWrites = kv.num_disk_writes;
  n.diskWriting = frame.stats.disk.writing;

  // Contiguous slabs share nothing: each holds every token of its own sequence.
  n.contiguousReservedTokens = frame.contiguousReservedTokens;
  for (const PoolFrameSequence& s : frame.sequences)
    n.contiguousStoredTokens += std::min<int64_t>(s.storedTokens(), frame.maxContext);
  n.contiguousWaste = n.contiguousReservedTokens > 0
                          ? std::max<int64_t>(0, n.contiguousReservedTokens - n.contiguousStoredTokens) /
                                static_cast<double>(n.contiguousReservedTokens)
                          : 0.0;
  return n;
}

QString kvPercent(double fraction) { return QStringLiteral("%1 %").arg(fraction * 100.0, 0, 'f', 1); }

QString kvBytes(uint64_t bytes) { return QLocale::c().formattedDataSize(static_cast<qint64>(bytes), 1, QLocale::DataSizeIecFormat); }
