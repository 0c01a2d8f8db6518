#pragma once
// The live numbers of the block-pool view, from one PoolFrame: gauges counted from the snapshot
// (so they always match the cells drawn), counters from the engine's stats, and the contiguous
// allocation comparison. Pure: the stats panel and the contiguous strip show these.

#include <QString>

#include <cstdint>

#include "appcore/pool/pool_frame.h"

struct KvPoolNumbers {
  int32_t blockSize = 0;
  int32_t numBlocks = 0;
  int32_t numUsed = 0;    // ref count >= 1
  int32_t numCached = 0;  // ref count 0, content kept
  int32_t numFree = 0;
  int32_t numHostBlocks = 0;
  int32_t numSwappedBlocks = 0;  // host blocks in use
  int32_t numSharedBlocks = 0;   // in-use blocks with ref count > 1
  int64_t tokensStored = 0;      // filled slots of in-use device blocks, each block once
  int64_t emptySlots = 0;        // unfilled slots of in-use blocks (internal fragmentation)
  double fragmentation = 0;      // emptySlots / (numUsed * blockSize), 0..1
  int64_t blocksSavedBySharing = 0;  // sum over in-use blocks of (ref count - 1)
  uint64_t bytesSavedBySharing = 0;  // from the engine's stats (0 when it does not know block bytes)
  uint64_t bytesPerBlock = 0;        // all layers, K and V, in the pool's element type (0: not known)
  int64_t prefixLookupTokens = 0, prefixHitTokens = 0;
  double prefixHitRate = 0;  // hit / lookup tokens, 0..1
  int64_t numPreemptions = 0;  // recompute
  int64_t numSwapOuts = 0;     // preempted by swap
  double tokensPerSecond = 0;
  int64_t stepIndex = 0;
  QString lastStepSummary;
  // Contiguous allocation: one max-length slab per sequence, against the tokens stored.
  int64_t contiguousReservedTokens = 0;
  int64_t contiguousStoredTokens = 0;  // each sequence's own tokens (a slab shares nothing)
  double contiguousWaste = 0;  // (reserved - stored) / reserved, 0..1
  int64_t pagedSlots = 0;      // numUsed * blockSize
  double pagedWaste = 0;       // emptySlots / pagedSlots (= fragmentation)
  PoolFrameWindow slidingWindow;
  int32_t numOutsideWindow = 0;  // in-use blocks no owner's sliding window reaches
  // The disk tier under the pool (EngineStats::disk), when the engine has one.
  bool diskTier = false;
  int64_t numDiskFiles = 0;      // blocks on disk (the folder's, every model's)
  uint64_t diskBytes = 0, diskMaxBytes = 0;
  int64_t numDiskReads = 0;      // blocks read back into the pool
  int64_t diskHitTokens = 0;     // prompt tokens they served (beside prefixHitTokens)
  int64_t numDiskWrites = 0;     // blocks written
  bool diskWriting = true;       // false while a failed write (a full disk) has stopped it
};

KvPoolNumbers computeKvPoolNumbers(const PoolFrame& frame);

// "12.5 %"
QString kvPercent(double fraction);
// "1.5 MiB"
QString kvBytes(uint64_t bytes);
