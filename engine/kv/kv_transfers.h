#pragma once
// The block transfers the KV manager asks of the backend: copies inside the device pool
// (copy-on-write), swaps between the device pool and the host pool, and blocks read from disk. They are listed in the
// order the manager made them and must take effect in that order, before the step's forward
// pass: a block released by one operation can be the destination of the next. batch_transfers()
// cuts the list into runs of one kind with no block both read and written, so each run can be
// one parallel launch.

#include <cstdint>
#include <span>
#include <vector>

#include "engine/backend/kv_cache_shape.h"

namespace pagedchat {

enum class TransferKind : uint8_t {
  copy,      // device block -> device block
  swap_out,  // device block -> host block
  swap_in,   // host block -> device block
  from_disk,  // a block read from disk (src: the caller's staging id, KvManager::stage) -> device block
};

struct BlockTransfer {
  TransferKind kind = TransferKind::copy;
  int32_t src = 0;
  int32_t dst = 0;
};

struct TransferBatch {
  TransferKind kind = TransferKind::copy;
  std::vector<BlockCopy> pairs;  // [num_pairs] (src, dst) in the kind's spaces
};

std::vector<TransferBatch> batch_transfers(std::span<const BlockTransfer> transfers);
const char* transfer_kind_name(TransferKind k);

}  // namespace pagedchat
