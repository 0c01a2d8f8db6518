#pragma once
// Paged against contiguous allocation in figures: what one slab of the context length per chat
// would reserve and hold, against the blocks the paged pool holds for the same chats. The
// contiguous strip draws it; the contiguous lesson says it.

#include <QString>

#include <vector>

#include "appcore/pool/kv_pool_numbers.h"

struct KvLayoutSegment {
  pagedchat::SequenceId seq = -1;
  QString title;
  int colorIndex = 0;
  int64_t used = 0;      // slots holding its tokens
  int64_t reserved = 0;  // slots set aside for it
  bool fits = true;      // contiguous: its slab lies inside the pool
};

struct KvLayoutComparison {
  int64_t capacity = 0;     // the pool's slots (blocks x block size)
  int64_t maxContext = 0;   // one contiguous slab
  std::vector<KvLayoutSegment> contiguous;  // one slab per chat, in the legend's order
  std::vector<KvLayoutSegment> paged;       // the blocks each holds (a shared block with its first owner)
  int64_t contiguousReserved = 0, contiguousUsed = 0;
  int64_t pagedReserved = 0, pagedUsed = 0;
  int slabsThatFit = 0;  // capacity / maxContext
  int numWaiting = 0;    // chats whose slab lies past the pool's end
};

KvLayoutComparison computeLayoutComparison(const PoolFrame& frame);
// The two bars' captions: "Contiguous: 3 slabs of 256 = 768 tokens reserved, ..." and "Paged: ...".
QString kvContiguousCaption(const KvLayoutComparison& layout, const KvPoolNumbers& numbers);
QString kvPagedCaption(const KvPoolNumbers& numbers);
