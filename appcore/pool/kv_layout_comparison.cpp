// The same chats laid out as contiguous slabs and as paged blocks, and the figures of each.
#include "appcore/pool/kv_layout_comparison.h"

#include <QCoreApplication>

#include <algorithm>
#include <set>

using namespace pagedchat;

namespace {
QString tr(const char* text) { return QCoreApplication::translate("KvContiguousStrip", text); }
}  // namespace

KvLayoutComparison computeLayoutComparison(const PoolFrame& frame) {
  KvLayoutComparison c;
  const KvSnapshot& snap = frame.snapshot;
  c.capacity = static_cast<int64_t>(snap.blocks.size()) * snap.block_size;
  c.maxContext = frame.maxContext;
  c.slabsThatFit = c.maxContext > 0 ? static_cast<int>(c.capacity / c.maxContext) : 0;
  std::set<int32_t> counted;
  for (const PoolFrameSequence& s : frame.sequences) {
    KvLayoutSegment slab{s.id, s.chatTitle, s.colorIndex};
    // A contiguous slab holds every token of its own: a shared prefix is stored once per chat.
    slab.reserved = c.maxContext;
    slab.used = std::min<int64_t>(s.storedTokens(), c.maxContext);
    slab.fits = c.contiguousReserved + slab.reserved <= c.capacity;
    c.numWaiting += slab.fits ? 0 : 1;
    c.contiguousReserved += slab.reserved;
    c.contiguousUsed += slab.used;
    c.contiguous.push_back(slab);

    KvLayoutSegment blocks{s.id, s.chatTitle, s.colorIndex};
    for (int32_t b : s.blockTable) {
      if (b < 0 || b >= static_cast<int32_t>(snap.blocks.size())) continue;
      const KvBlockInfo& info = snap.blocks[static_cast<size_t>(b)];
      // A swapped chat's table names host blocks: it holds no device block.
      if (std::find(info.owners.begin(), info.owners.end(), s.id) == info.owners.end()) continue;
      if (!counted.insert(b).second) continue;
      blocks.reserved += snap.block_size;
      blocks.used += info.num_filled;
    }
    c.pagedReserved += blocks.reserved;
    c.pagedUsed += blocks.used;
    c.paged.push_back(blocks);
  }
  return c;
}

QString kvContiguousCaption(const KvLayoutComparison& layout, const KvPoolNumbers& numbers) {
  QString text = tr("Contiguous: %1 slabs of %2 = %3 tokens reserved, %4 stored, %5 wasted")
                     .arg(layout.contiguous.size())
                     .arg(layout.maxContext)
                     .arg(numbers.contiguousReservedTokens)
                     .arg(layout.contiguousUsed)
                     .arg(kvPercent(numbers.contiguousWaste));
  if (layout.maxContext > 0) {
    const QString slabs = layout.slabsThatFit == 1 ? tr("1 slab") : tr("%1 slabs").arg(layout.slabsThatFit);
    text += layout.numWaiting > 0 ? tr("; the pool holds %1: %2 of these chats could not start").arg(slabs).arg(layout.numWaiting)
                                  : tr("; the pool holds %1").arg(slabs);
  }
  return text;
}

QString kvPagedCaption(const KvPoolNumbers& numbers) {
  return tr("Paged: %1 slots in blocks of %2, %3 stored, %4 wasted; %5 blocks free")
      .arg(numbers.pagedSlots)
      .arg(numbers.blockSize)
      .arg(numbers.tokensStored)
      .arg(kvPercent(numbers.pagedWaste))
      .arg(numbers.numFree);
}
