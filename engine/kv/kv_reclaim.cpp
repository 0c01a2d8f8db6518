// KvManager under memory pressure: releasing parked sequences, preempting running ones by
// recompute or by swap to the host pool, swapping back in, and planning which to do.
#include <algorithm>
#include <cassert>

#include "engine/kv/kv_manager.h"

namespace pagedchat {

void KvManager::reclaim(SequenceId seq) {
  assert(get(seq).state == SequenceState::parked);
  ++counters_.reclaims;
  release(seq, KvEventKind::reclaim, true);
}

void KvManager::preempt(SequenceId seq) {
  assert(get(seq).state == SequenceState::running);
  ++counters_.preemptions;
  release(seq, KvEventKind::preempt, true);
}

bool KvManager::can_swap_out(SequenceId seq) const {
  const Sequence& s = get(seq);
  return s.state == SequenceState::running && static_cast<size_t>(host_.num_free()) >= s.block_table.size();
}

void KvManager::swap_out(SequenceId seq) {
  assert(can_swap_out(seq));
  Sequence& s = get(seq);
  std::vector<int32_t> host_table;
  host_table.reserve(s.block_table.size());
  for (int32_t b : s.block_table) {
    int32_t h = host_.store(pool_.block(b).content, pool_.tokens(b));
    transfers_.push_back({TransferKind::swap_out, b, h});
    record(KvEventKind::swap_out, seq, b, h);
    host_table.push_back(h);
  }
  for (auto it = s.block_table.rbegin(); it != s.block_table.rend(); ++it) drop_ref(seq, *it, true);
  s.block_table = std::move(host_table);
  s.state = SequenceState::swapped;
  ++counters_.swap_outs;
}

namespace {
// The device block, indexed by the prefix cache, that holds the same content as a full host
// block (equal content ids mean equal token prefixes); -1 if none.
int32_t device_copy(const BlockPool& pool, const BlockContent& c) {
  if (c.content_id == 0) return -1;
  int32_t r = pool.lookup(c.hash);
  return r >= 0 && pool.block(r).content.content_id == c.content_id ? r : -1;
}
}  // namespace

int32_t KvManager::num_blocks_to_swap_in(SequenceId seq) const {
  const Sequence& s = get(seq);
  assert(s.state == SequenceState::swapped);
  int32_t need = 0;
  for (int32_t h : s.block_table) {
    int32_t r = device_copy(pool_, host_.content(h));
    if (r < 0 || pool_.block(r).ref_count == 0) ++need;  // a revived cached block is taken too
  }
  return need;
}

void KvManager::swap_in(SequenceId seq) {
  assert(can_swap_in(seq));
  Sequence& s = get(seq);
  std::vector<int32_t> table(s.block_table.size(), -1);
  // Share what the device still holds first, so that no allocation below evicts it.
  for (size_t i = 0; i < table.size(); ++i) {
    int32_t r = device_copy(pool_, host_.content(s.block_table[i]));
    if (r < 0) continue;
    pool_.add_ref(r);
    record(KvEventKind::cache_hit, seq, r, s.block_table[i]);
    table[i] = r;
  }
  for (size_t i = 0; i < table.size(); ++i) {
    int32_t h = s.block_table[i];
    if (table[i] < 0) {
      int32_t b = take_block(seq);
      pool_.restore(b, host_.content(h), host_.tokens(h));
      transfers_.push_back({TransferKind::swap_in, h, b});
      record(KvEventKind::swap_in, seq, b, h);
      table[i] = b;
    }
    host_.free(h);
  }
  s.block_table = std::move(table);
  s.state = SequenceState::running;
  ++counters_.swap_ins;
}

int32_t KvManager::num_blocks_freed_by(std::span<const SequenceId> seqs) const {
  std::unordered_map<int32_t, int32_t> drops;
  int32_t n = 0;
  for (SequenceId seq : seqs) {
    const Sequence& s = get(seq);
    assert(on_device(s));
    for (int32_t b : s.block_table)
      if (++drops[b] == pool_.block(b).ref_count) ++n;
  }
  return n;
}

ReclaimPlan KvManager::plan_reclaim(int32_t num_blocks_needed, std::span<const SequenceId> running_by_arrival,
                                    PreemptMode mode) const {
  ReclaimPlan plan;
  plan.num_blocks_needed = num_blocks_needed;
  int32_t num_free = pool_.num_free(), num_cached = pool_.num_cached(), num_host_free = host_.num_free();
  std::unordered_map<int32_t, int32_t> drops;  // references the plan has released so far
  auto release_all = [&](const Sequence& s) {
    for (int32_t b : s.block_table) {
      const Block& blk = pool_.block(b);
      if (++drops[b] < blk.ref_count) continue;
      if (blk.registered) ++num_cached;  // as BlockPool::release
      else ++num_free;
    }
  };

  // Parked sequences first: releasing one costs at most its partial block, the rest stays cached.
  std::vector<std::pair<uint64_t, SequenceId>> parked;
  for (const auto& [id, s] : seqs_)
    if (s.state == SequenceState::parked) parked.push_back({s.last_used, id});
  std::sort(parked.begin(), parked.end());
  for (size_t i = 0; i < parked.size() && num_free < num_blocks_needed; ++i) {
    release_all(get(parked[i].second));
    plan.reclaim.push_back(parked[i].second);
  }
  // Cached blocks count as available (allocation evicts them); then the latest arrivals go.
  for (size_t i = running_by_arrival.size(); i-- > 0 && num_free + num_cached < num_blocks_needed;) {
    SequenceId victim = running_by_arrival[i];
    const Sequence& s = get(victim);
    assert(s.state == SequenceState::running);
    if (mode == PreemptMode::swap && static_cast<size_t>(num_host_free) >= s.block_table.size()) {
      num_host_free -= static_cast<int32_t>(s.block_table.size());
      plan.swap_out.push_back(victim);
    } else {
      plan.preempt.push_back(victim);
    }
    release_all(s);
  }
  plan.num_free_after = num_free;
  plan.num_available_after = num_free + num_cached;
  plan.enough = plan.num_available_after >= num_blocks_needed;
  return plan;
}

void KvManager::apply(const ReclaimPlan& plan) {
  for (SequenceId seq : plan.reclaim) reclaim(seq);
  for (SequenceId seq : plan.swap_out) swap_out(seq);
  for (SequenceId seq : plan.preempt) preempt(seq);
}

}  // namespace pagedchat
