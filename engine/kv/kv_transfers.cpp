#include "engine/kv/kv_transfers.h"

#include <unordered_set>

namespace pagedchat {
namespace {
// A block named by its space: device ids and host ids are different blocks.
int64_t key(bool host, int32_t id) { return (static_cast<int64_t>(host) << 32) | static_cast<uint32_t>(id); }
// A disk block's staging id is a space of its own, like the host's: never a device block.
bool src_on_host(TransferKind k) { return k == TransferKind::swap_in || k == TransferKind::from_disk; }
bool dst_on_host(TransferKind k) { return k == TransferKind::swap_out; }
}  // namespace

std::vector<TransferBatch> batch_transfers(std::span<const BlockTransfer> transfers) {
  std::vector<TransferBatch> batches;
  std::unordered_set<int64_t> reads, writes;  // of the open batch
  for (const BlockTransfer& t : transfers) {
    int64_t src = key(src_on_host(t.kind), t.src), dst = key(dst_on_host(t.kind), t.dst);
    bool hazard = writes.count(src) || writes.count(dst) || reads.count(dst);
    if (batches.empty() || batches.back().kind != t.kind || hazard) {
      batches.push_back({t.kind, {}});
      reads.clear();
      writes.clear();
    }
    batches.back().pairs.push_back({t.src, t.dst});
    reads.insert(src);
    writes.insert(dst);
  }
  return batches;
}

const char* transfer_kind_name(TransferKind k) {
  switch (k) {
    case TransferKind::copy: return "copy";
    case TransferKind::swap_out: return "swap_out";
    case TransferKind::swap_in: return "swap_in";
    case TransferKind::from_disk: return "from_disk";
  }
  return "?";
}

}  // namespace pagedchat
