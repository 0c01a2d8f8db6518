#pragma once
// What each cell of the block-pool view shows, computed from a PoolFrame without painting:
// one display record per device block, per host (swap) block and per block of the disk strip
// (the disk tier's blocks of the chats' histories), and a lookup from sequence id
// to the frame's sequence. The view paints these; the tests check them directly.

#include <QString>

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "appcore/pool/pool_frame.h"

enum class KvCellKind : uint8_t {
  Free,     // empty
  InUse,    // one reference
  Shared,   // ref count > 1: the count is drawn on the cell
  Cached,   // ref count 0, content kept for the prefix cache (evictable): drawn faded, outlined
  Swapped,  // a host block holding a swapped-out sequence's KV
  OnDisk,   // a disk tier block of a chat's history (PoolFrameDiskBlock): faded while only on disk
};

const char* kvCellKindName(KvCellKind kind);

struct KvCell {
  KvCellKind kind = KvCellKind::Free;
  int32_t refCount = 0;
  int32_t numFilled = 0;
  int colorIndex = -1;  // the first owner's chat colour; -1: no owner known to the frame
  bool inPrefixCache = false;
  // Every owner in the frame has slid past the block: its next token's window on the local
  // layers starts after the block's last slot (PoolFrameWindow), so only global layers read it.
  bool outsideWindow = false;
  bool onDisk = false;  // its copy is on disk too (the disk tier): marked in a corner
  bool alsoInPool = false;  // an OnDisk cell whose tokens the pool holds now too
  // Drawn faded and outlined: kept, but nothing live reads it (a cached block, a block only on disk).
  bool faded() const { return kind == KvCellKind::Cached || (kind == KvCellKind::OnDisk && !alsoInPool); }
};

struct KvCellModel {
  int32_t blockSize = 0;
  std::vector<KvCell> cells;      // [num_blocks] device pool
  std::vector<KvCell> hostCells;  // [num_host_blocks]
  std::vector<KvCell> diskCells;  // [PoolFrame::diskBlocks]: refCount is how many chats' histories start with it
  // Sequence id -> index into PoolFrame::sequences.
  std::unordered_map<pagedchat::SequenceId, int> sequenceIndex;
};

KvCellModel buildKvCellModel(const PoolFrame& frame);

// The logical blocks of a sequence of `num_tokens` tokens that its next token's sliding window
// (`window` positions, itself included) no longer reaches: the first ones, whole blocks only.
int32_t kvBlocksOutsideWindow(int64_t num_tokens, int window, int32_t block_size);

// The text drawn on a cell: the ref count of a shared cell, else empty.
QString kvCellLabel(const KvCell& cell);

// The tokens a block holds, read through its first owner known to the frame: the owner's
// logical index of the block in its block table, then that slice of its tokens. Empty when no
// owner of the block is in frame.sequences (a cached or free block).
std::vector<int32_t> kvBlockTokens(const PoolFrame& frame, const KvCellModel& model, int32_t block, bool host);

// What hovering a cell of the disk strip says: whose history it is in and where, whether the
// pool still holds it, and its text.
QString kvDiskBlockDescription(const PoolFrame& frame, int32_t index);

// What hovering a cell says, as plain lines: block id, state, ref count, owners (chat titles),
// filled slots, whether it is in the prefix cache, and the text of its tokens.
QString kvBlockDescription(const PoolFrame& frame, const KvCellModel& model, int32_t block, bool host);
