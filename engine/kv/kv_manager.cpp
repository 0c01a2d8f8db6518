// KvManager: construction, the sequence lifecycle (start, append with copy-on-write, fork,
// park, free) and the helpers every operation shares (block taking, reference dropping,
// events). Prefix lookup, reclaim/swap and inspection live in kv_prefix.cpp,
// kv_reclaim.cpp, kv_inspect.cpp and kv_audit.cpp.
#include "engine/kv/kv_manager.h"

#include <algorithm>
#include <cassert>
#include <climits>

#include "engine/common/error.h"

namespace pagedchat {
namespace {
const KvManagerConfig& validated(const KvManagerConfig& c) {
  int32_t bs = c.block_size;
  if (!is_valid_block_size(bs)) fail("KV block size %d is not one of %s", bs, kValidBlockSizes);
  if (c.num_blocks <= 0) fail("the KV pool needs at least one block (got %d)", c.num_blocks);
  if (c.num_host_blocks < 0) fail("the host KV pool cannot have %d blocks", c.num_host_blocks);
  // Slots (block * block_size + offset) and token counts are 32-bit.
  if (static_cast<int64_t>(c.num_blocks) * bs > INT32_MAX || static_cast<int64_t>(c.num_host_blocks) * bs > INT32_MAX)
    fail("a KV pool of %d blocks of %d tokens is too large", std::max(c.num_blocks, c.num_host_blocks), bs);
  return c;
}
}  // namespace

KvManager::KvManager(KvManagerConfig config)
    : config_(validated(config)),
      pool_(config_.num_blocks, config_.block_size, config_.hash_fn ? config_.hash_fn : BlockHashFn(hash_block_tokens)),
      host_(config_.num_host_blocks, config_.block_size),
      root_hash_(root_block_hash(config_.model_id)) {}

const KvManager::Sequence& KvManager::get(SequenceId seq) const {
  auto it = seqs_.find(seq);
  assert(it != seqs_.end() && "unknown sequence");
  return it->second;
}

KvManager::Sequence& KvManager::get(SequenceId seq) {
  return const_cast<Sequence&>(static_cast<const KvManager*>(this)->get(seq));
}

int64_t KvManager::num_blocks_for(int64_t num_tokens) const {
  return num_tokens <= 0 ? 0 : (num_tokens + block_size() - 1) / block_size();
}

void KvManager::record(KvEventKind kind, SequenceId seq, int32_t block, int64_t peer) {
  KvEvent e{kind, seq, block, peer, 0, BlockState::free};
  if (block >= 0) {
    e.ref_count = pool_.block(block).ref_count;
    e.block_state = pool_.state(block);
  }
  events_.push(e);
}

int32_t KvManager::take_block(SequenceId seq) {
  bool evicted = false;
  int32_t b = pool_.allocate(&evicted);
  if (evicted) {
    ++counters_.evictions;
    events_.push({KvEventKind::evict, -1, b, -1, 0, BlockState::free});
  }
  ++counters_.allocations;
  record(KvEventKind::allocate, seq, b);
  return b;
}

void KvManager::drop_ref(SequenceId seq, int32_t block, bool keep_content) {
  pool_.release(block, keep_content);
  record(KvEventKind::free, seq, block);
}

void KvManager::release(SequenceId seq, KvEventKind why, bool keep_content) {
  Sequence& s = get(seq);
  record(why, seq);
  // Last block first: in the cached list a prefix then outlives its tail, and the tail is
  // useless without it.
  for (auto it = s.block_table.rbegin(); it != s.block_table.rend(); ++it) {
    if (on_device(s)) {
      drop_ref(seq, *it, keep_content);
    } else {
      host_.free(*it);
      events_.push({KvEventKind::free, seq, -1, *it, 0, BlockState::free});
    }
  }
  seqs_.erase(seq);
}

std::vector<int32_t> KvManager::stored_tokens(SequenceId seq) const {
  const Sequence& s = get(seq);
  std::vector<int32_t> out;
  out.reserve(s.num_tokens);
  for (int32_t b : s.block_table) {
    std::span<const int32_t> t = on_device(s) ? pool_.tokens(b) : host_.tokens(b);
    out.insert(out.end(), t.begin(), t.end());
  }
  out.resize(static_cast<size_t>(s.num_tokens));  // a rewound sequence may hold a prefix of its last block
  return out;
}

void KvManager::slot_mapping(SequenceId seq, int32_t start, int32_t n, std::vector<int64_t>& out) const {
  const Sequence& s = get(seq);
  assert(on_device(s) && start >= 0 && start + n <= s.num_tokens);
  const int32_t bs = block_size();
  for (int32_t p = start; p < start + n; ++p) out.push_back(static_cast<int64_t>(s.block_table[p / bs]) * bs + p % bs);
}

int32_t KvManager::num_blocks_to_append(SequenceId seq, int32_t n) const {
  const Sequence& s = get(seq);
  assert(on_device(s));
  if (n <= 0) return 0;
  int64_t need = num_blocks_for(static_cast<int64_t>(s.num_tokens) + n) - static_cast<int64_t>(s.block_table.size());
  if (s.num_tokens % block_size() != 0 && pool_.block(s.block_table.back()).ref_count > 1) ++need;
  return static_cast<int32_t>(std::min<int64_t>(need, INT32_MAX));
}

void KvManager::append(SequenceId seq, std::span<const int32_t> tokens, std::vector<int64_t>& slot_mapping) {
  Sequence& s = get(seq);
  assert(s.state == SequenceState::running);
  assert(can_append(seq, static_cast<int32_t>(tokens.size())));
  const int32_t bs = block_size();
  for (int32_t token : tokens) {
    int32_t offset = s.num_tokens % bs;
    if (offset == 0) s.block_table.push_back(take_block(seq));
    else if (pool_.block(s.block_table.back()).ref_count > 1) copy_on_write(seq, s);
    else if (pool_.block(s.block_table.back()).content.num_filled > offset) pool_.shrink(s.block_table.back(), offset);
    int32_t b = s.block_table.back();
    pool_.write(b, token);
    slot_mapping.push_back(static_cast<int64_t>(b) * bs + offset);
    ++s.num_tokens;
    if (offset == bs - 1) seal_last(s);
  }
}

void KvManager::copy_on_write(SequenceId seq, Sequence& s) {
  int32_t src = s.block_table.back();
  int32_t dst = take_block(seq);
  pool_.copy_tokens(src, dst, s.num_tokens % block_size());
  transfers_.push_back({TransferKind::copy, src, dst});
  s.block_table.back() = dst;
  ++counters_.cow_copies;
  record(KvEventKind::copy_on_write, seq, src, dst);
  drop_ref(seq, src, true);  // still held by the others
}

void KvManager::seal_last(Sequence& s) {
  size_t i = s.block_table.size() - 1;
  uint64_t parent_hash = s.root_hash, parent_content_id = 0;
  if (i > 0) {
    const BlockContent& parent = pool_.block(s.block_table[i - 1]).content;
    parent_hash = parent.hash;
    parent_content_id = parent.content_id;
  }
  pool_.seal(s.block_table[i], parent_hash, parent_content_id);
  if (track_sealed_) sealed_.push_back(s.block_table[i]);
}

void KvManager::fork(SequenceId parent, SequenceId child) {
  assert(!has_sequence(child) && on_device(get(parent)));
  Sequence s = get(parent);  // a copy: the insert below may rehash
  s.state = SequenceState::running;
  s.last_used = 0;
  for (int32_t b : s.block_table) pool_.add_ref(b);
  seqs_.emplace(child, s);
  record(KvEventKind::fork, child, -1, parent);
  for (int32_t b : s.block_table) record(KvEventKind::share, child, b);
}

void KvManager::rewind(SequenceId seq, int32_t num_tokens) {
  Sequence& s = get(seq);
  assert(on_device(s) && num_tokens >= 0 && num_tokens <= s.num_tokens);
  const size_t keep = static_cast<size_t>(num_blocks_for(num_tokens));
  record(KvEventKind::rewind, seq, -1, num_tokens);
  // Last block first, as in release(): a kept prefix outlives its cached tail.
  while (s.block_table.size() > keep) {
    drop_ref(seq, s.block_table.back(), true);
    s.block_table.pop_back();
  }
  s.num_tokens = num_tokens;
  const int32_t offset = num_tokens % block_size();
  if (offset == 0 || s.block_table.empty()) return;
  const int32_t last = s.block_table.back();
  if (pool_.block(last).ref_count == 1 && pool_.block(last).content.num_filled > offset) pool_.shrink(last, offset);
}

void KvManager::park(SequenceId seq) {
  Sequence& s = get(seq);
  assert(s.state == SequenceState::running);
  s.state = SequenceState::parked;
  s.last_used = ++clock_;
  record(KvEventKind::park, seq);
}

void KvManager::resume(SequenceId seq) {
  Sequence& s = get(seq);
  assert(s.state == SequenceState::parked);
  s.state = SequenceState::running;
  record(KvEventKind::resume, seq);
}

void KvManager::free(SequenceId seq) { release(seq, KvEventKind::finish, true); }

void KvManager::discard(SequenceId seq) { release(seq, KvEventKind::finish, false); }

int32_t KvManager::evict_cached(int32_t n) {
  int32_t done = 0;
  for (; done < n && pool_.num_cached() > 0; ++done) {
    int32_t b = pool_.evict_lru();
    ++counters_.evictions;
    record(KvEventKind::evict, -1, b);
  }
  return done;
}

}  // namespace pagedchat
