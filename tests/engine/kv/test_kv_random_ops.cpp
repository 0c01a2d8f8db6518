// A long random run of the KV manager's operations, driven as a scheduler would drive them:
// steps of 1-4 operations, after which the step's transfers run (in hazard-free batches, each
// in any order) and then its forward writes. After every operation the bookkeeping is checked
// (the manager's own audit, the pool's accounting read back through a snapshot, each
// sequence's stored tokens); after every step the K/V content itself, simulated by a shadow
// pool (one token id per slot) that changes only through the transfers and slot mappings the
// manager hands out. Prompts share prefixes drawn from a few templates, so the prefix cache hits.
// As the manager's contract asks, a sequence appended to in a step is not forked, parked,
// released, rewound or swapped out later in that step. Rewinds cut a sequence back to a random
// token, and forks happen at the latest token or at a random one (a fork, then a rewind of the
// child), so blocks are shared at any cut, inside a block or on its boundary.
// The disk tier rides along: each step's filled blocks (take_sealed) are written to a simulated
// disk with their shadow content; a prompt from the history may find its blocks there, staged and
// started on (from_disk transfers copy the disk's content in); files are damaged (a read that
// fails: the chain stops there) and the disk fills (writes dropped for a while).

#include <QtTest>

#include <algorithm>
#include <array>
#include <map>
#include <random>

#include "engine/common/error.h"
#include "engine/kv/kv_manager.h"

using namespace pagedchat;

namespace {

struct Live {
  SequenceState state = SequenceState::running;
  std::vector<int32_t> tokens;   // what its blocks must hold
  std::vector<int32_t> pending;  // prompt tokens not appended yet (chunked prefill)
  bool appended_this_step = false;
};

class RandomRun {
 public:
  static constexpr int32_t kNumBlocks = 40, kNumHostBlocks = 24, kMaxSeqs = 16;

  // hash_fn: empty for the real hash; a weak one makes collisions common.
  RandomRun(int32_t block_size, uint64_t seed, BlockHashFn hash_fn)
      : bs_(block_size),
        max_tokens_(8 * block_size + 2),
        kv_({.num_blocks = kNumBlocks, .block_size = block_size, .num_host_blocks = kNumHostBlocks, .model_id = 7,
             .hash_fn = std::move(hash_fn)}),
        rng_(seed),
        shadow_device_(static_cast<size_t>(kNumBlocks) * block_size, -1),
        shadow_host_(static_cast<size_t>(kNumHostBlocks) * block_size, -1) {
    kv_.track_sealed(true);
    for (int t = 0; t < 4; ++t) {
      templates_.emplace_back();
      for (int i = 0; i < 3 * bs_ + 2; ++i) templates_.back().push_back(1 + static_cast<int32_t>(below(999)));
    }
  }

  // Runs num_ops random operations; returns the first failure, or an empty string.
  std::string run(int num_ops) {
    for (int i = 0; i < num_ops;) {
      for (uint64_t n = 1 + below(4); n > 0 && i < num_ops; --n, ++i) {
        const char* name = step();
        if (std::string err = check_bookkeeping(); !err.empty())
          return "after op " + std::to_string(i) + " (" + name + "): " + err;
      }
      if (std::string err = finish_step(); !err.empty()) return "after the step ending at op " + std::to_string(i) + ": " + err;
    }
    return {};
  }

  const KvManager& kv() const { return kv_; }
  const std::map<std::string, std::pair<int64_t, int64_t>>& ops() const { return ops_; }  // name -> tried, done
  const std::array<int64_t, kNumKvEventKinds>& events() const { return events_; }
  // Transfer batches, and how many of them a hazard inside a run of one kind cut off.
  int64_t num_batches() const { return num_batches_; }
  int64_t num_hazard_splits() const { return num_batches_ - num_kind_runs_; }

 private:
  uint64_t below(uint64_t n) { return n ? rng_() % n : 0; }
  int32_t decode_token() { return 1000 + static_cast<int32_t>(below(8)); }  // a small vocabulary: decodes repeat

  template <typename Pred>
  SequenceId pick(Pred pred) {
    std::vector<SequenceId> ids;
    for (const auto& [id, s] : seqs_)
      if (pred(s)) ids.push_back(id);
    return ids.empty() ? -1 : ids[below(ids.size())];
  }
  SequenceId pick_state(SequenceState st) { return pick([st](const Live& s) { return s.state == st; }); }
  // One not appended to in this step: it may be forked, parked, released or swapped out.
  SequenceId pick_settled(SequenceState st) {
    return pick([&](const Live& s) { return s.state == st && !s.appended_this_step; });
  }
  std::vector<SequenceId> settled_running() const {
    std::vector<SequenceId> ids;
    for (SequenceId id : running_)
      if (!seqs_.at(id).appended_this_step) ids.push_back(id);
    return ids;
  }

  void set_running(SequenceId id) {
    seqs_[id].state = SequenceState::running;
    running_.push_back(id);
  }
  void leave_running(SequenceId id) { running_.erase(std::find(running_.begin(), running_.end(), id)); }
  // The sequence is gone from the manager; its content may come back later as a prompt.
  void retire(SequenceId id) {
    if (seqs_[id].state == SequenceState::running) leave_running(id);
    histories_.push_back(seqs_[id].tokens);
    if (histories_.size() > 16) histories_.erase(histories_.begin());
    seqs_.erase(id);
  }

  void make_room(int32_t need, std::vector<SequenceId> victims) {
    PreemptMode mode = below(2) ? PreemptMode::swap : PreemptMode::recompute;
    ReclaimPlan plan = kv_.plan_reclaim(need, victims, mode);
    kv_.apply(plan);
    for (SequenceId id : plan.reclaim) retire(id);
    for (SequenceId id : plan.preempt) retire(id);
    for (SequenceId id : plan.swap_out) {
      leave_running(id);
      seqs_[id].state = SequenceState::swapped;
    }
  }

  void append(SequenceId id, std::span<const int32_t> tokens) {
    std::vector<int64_t> slot_mapping;
    kv_.append(id, tokens, slot_mapping);
    for (size_t i = 0; i < tokens.size(); ++i) writes_.push_back({slot_mapping[i], tokens[i]});
    seqs_[id].appended_this_step = true;
    seqs_[id].tokens.insert(seqs_[id].tokens.end(), tokens.begin(), tokens.end());
  }

  bool op_start() {
    if (seqs_.size() >= kMaxSeqs) return false;
    std::vector<int32_t> prompt;
    if (!histories_.empty() && below(4) == 0) {
      prompt = histories_[below(histories_.size())];  // a preempted or released sequence comes back
      if (static_cast<int32_t>(prompt.size()) >= max_tokens_) prompt.resize(max_tokens_ - 1 - below(bs_));
    } else {
      const std::vector<int32_t>& t = templates_[below(templates_.size())];
      prompt.assign(t.begin(), t.begin() + static_cast<ptrdiff_t>(below(t.size() + 1)));
      for (uint64_t n = 1 + below(2 * bs_); n > 0; --n) prompt.push_back(decode_token());
    }
    if (prompt.empty() || static_cast<int32_t>(prompt.size()) >= max_tokens_) return false;
    PrefixHit hit = kv_.find_prefix(prompt);
    int32_t chunk = 1 + static_cast<int32_t>(below(prompt.size() - hit.num_tokens));
    if (kv_.num_blocks_to_start(hit, chunk) > kv_.num_free_blocks()) {
      make_room(kv_.num_blocks_to_start(hit, chunk), settled_running());
      hit = kv_.find_prefix(prompt);  // the plan changed the pool: look again
      chunk = std::min<int32_t>(chunk, static_cast<int32_t>(prompt.size()) - hit.num_tokens);
    }
    if (kv_.num_blocks_to_start(hit, chunk) > kv_.num_available_blocks()) return false;
    SequenceId id = next_id_++;
    kv_.start(id, hit);
    seqs_[id].tokens.assign(prompt.begin(), prompt.begin() + hit.num_tokens);
    set_running(id);
    append(id, std::span(prompt).subspan(hit.num_tokens, chunk));
    seqs_[id].pending.assign(prompt.begin() + hit.num_tokens + chunk, prompt.end());
    return true;
  }

  bool op_append() {
    SequenceId id = pick_state(SequenceState::running);
    if (id < 0) return false;
    Live& s = seqs_[id];
    std::vector<int32_t> tokens;
    if (!s.pending.empty()) {
      size_t n = 1 + below(std::min<size_t>(s.pending.size(), 2 * bs_));
      tokens.assign(s.pending.begin(), s.pending.begin() + static_cast<ptrdiff_t>(n));
    } else {
      for (uint64_t n = below(4) ? 1 : 1 + below(bs_); n > 0; --n) tokens.push_back(decode_token());
    }
    if (static_cast<int32_t>(s.tokens.size() + tokens.size()) > max_tokens_) {  // done: it finishes
      if (s.appended_this_step) return false;
      kv_.free(id);
      retire(id);
      return true;
    }
    int32_t n = static_cast<int32_t>(tokens.size());
    if (kv_.num_blocks_to_append(id, n) > kv_.num_free_blocks()) {
      std::vector<SequenceId> others = settled_running();
      std::erase(others, id);
      make_room(kv_.num_blocks_to_append(id, n), others);
    }
    if (!kv_.can_append(id, n)) return false;
    append(id, tokens);
    Live& after = seqs_[id];
    after.pending.erase(after.pending.begin(), after.pending.begin() + std::min<ptrdiff_t>(n, after.pending.size()));
    return true;
  }

  // A prompt from the history, its blocks past the pool read from the disk where they are.
  bool op_disk_start() {
    if (histories_.empty()) return false;
    std::vector<int32_t> prompt = histories_[below(histories_.size())];
    if (static_cast<int32_t>(prompt.size()) >= max_tokens_) prompt.resize(max_tokens_ - 1 - below(bs_));
    if (prompt.size() < 2) return false;
    for (const KvManager::ChainBlock& b : kv_.chain_past_hits(prompt, 0, 64)) {
      auto it = disk_.find(b.hash);
      if (it == disk_.end()) break;
      const std::vector<int32_t> tokens(prompt.begin() + b.first_token, prompt.begin() + b.first_token + bs_);
      if (it->second.parent != b.parent_hash || it->second.tokens != tokens) break;  // the file's check: another chain
      kv_.stage(b.hash, b.parent_hash, tokens, static_cast<int32_t>(staging_.size()));
      staging_.push_back(it->second.content);
    }
    PrefixHit hit = kv_.find_prefix(prompt);
    if (hit.num_tokens >= static_cast<int32_t>(prompt.size())) return false;
    int32_t chunk = 1 + static_cast<int32_t>(below(prompt.size() - hit.num_tokens));
    if (kv_.num_blocks_to_start(hit, chunk) > kv_.num_available_blocks() || seqs_.size() >= kMaxSeqs) return false;
    const SequenceId id = next_id_++;
    kv_.start(id, hit);
    disk_hits_ += static_cast<int64_t>(hit.staged.size());
    seqs_[id].tokens.assign(prompt.begin(), prompt.begin() + hit.num_tokens);
    set_running(id);
    append(id, std::span(prompt).subspan(hit.num_tokens, chunk));
    seqs_[id].pending.assign(prompt.begin() + hit.num_tokens + chunk, prompt.end());
    return true;
  }
  bool op_disk_damage() {  // a torn or corrupt file: read back, it is refused (removed)
    if (disk_.empty()) return false;
    disk_.erase(std::next(disk_.begin(), static_cast<ptrdiff_t>(below(disk_.size()))));
    return true;
  }
  bool op_disk_full() {  // writes fail for the next few steps
    disk_full_steps_ = 1 + static_cast<int>(below(6));
    return true;
  }

  bool op_fork() {
    SequenceId parent = pick([](const Live& s) { return s.state != SequenceState::swapped && !s.appended_this_step; });
    if (parent < 0 || seqs_.size() >= kMaxSeqs) return false;
    SequenceId id = next_id_++;
    kv_.fork(parent, id);
    seqs_[id] = seqs_[parent];
    set_running(id);
    return true;
  }

  // Cut back to a random token count (0 included); a prompt still being prefilled forgets the
  // rest of it, as a rejected draft or a pruned beam would.
  bool op_rewind() {
    SequenceId id = pick([](const Live& s) { return s.state != SequenceState::swapped && !s.appended_this_step; });
    if (id < 0) return false;
    Live& s = seqs_[id];
    const int32_t k = static_cast<int32_t>(below(s.tokens.size() + 1));
    kv_.rewind(id, k);
    s.tokens.resize(static_cast<size_t>(k));
    s.pending.clear();
    return true;
  }

  // A fork at a random token of a resident parent: the child shares every block up to the cut.
  bool op_fork_at() {
    SequenceId parent = pick([](const Live& s) { return s.state != SequenceState::swapped && !s.appended_this_step; });
    if (parent < 0 || seqs_.size() >= kMaxSeqs) return false;
    const int32_t k = static_cast<int32_t>(below(seqs_[parent].tokens.size() + 1));
    SequenceId id = next_id_++;
    kv_.fork(parent, id);
    kv_.rewind(id, k);
    seqs_[id] = seqs_[parent];
    seqs_[id].tokens.resize(static_cast<size_t>(k));
    seqs_[id].pending.clear();
    set_running(id);
    return true;
  }

  bool op_swap_in() {
    SequenceId id = pick_state(SequenceState::swapped);
    if (id < 0) return false;
    if (kv_.num_blocks_to_swap_in(id) > kv_.num_free_blocks()) make_room(kv_.num_blocks_to_swap_in(id), settled_running());
    if (!kv_.can_swap_in(id)) return false;
    kv_.swap_in(id);
    set_running(id);
    return true;
  }

  // Runs one random operation; returns its name.
  const char* step() {
    struct Op { const char* name; int weight; bool (RandomRun::*run)(); };
    static const Op table[] = {
        {"start", 14, &RandomRun::op_start},
        {"append", 30, &RandomRun::op_append},
        {"fork", 6, &RandomRun::op_fork},
        {"fork_at", 5, &RandomRun::op_fork_at},
        {"rewind", 5, &RandomRun::op_rewind},
        {"swap_in", 6, &RandomRun::op_swap_in},
        {"free", 6, &RandomRun::op_free},
        {"park", 6, &RandomRun::op_park},
        {"resume", 6, &RandomRun::op_resume},
        {"reclaim", 3, &RandomRun::op_reclaim},
        {"evict", 3, &RandomRun::op_evict},
        {"swap_out", 4, &RandomRun::op_swap_out},
        {"preempt", 3, &RandomRun::op_preempt},
        {"pressure", 2, &RandomRun::op_pressure},
        {"discard", 1, &RandomRun::op_discard},
        {"disk_start", 6, &RandomRun::op_disk_start},
        {"disk_damage", 1, &RandomRun::op_disk_damage},
        {"disk_full", 1, &RandomRun::op_disk_full},
    };
    int total = 0;
    for (const Op& op : table) total += op.weight;
    int r = static_cast<int>(below(total));
    for (const Op& op : table) {
      if ((r -= op.weight) >= 0) continue;
      auto& [tried, done] = ops_[op.name];
      ++tried;
      done += (this->*op.run)() ? 1 : 0;
      return op.name;
    }
    return "?";
  }

  bool op_free() {
    SequenceId id = pick([](const Live& s) { return !s.appended_this_step; });
    if (id < 0) return false;
    kv_.free(id);
    retire(id);
    return true;
  }
  bool op_park() {
    SequenceId id = pick_settled(SequenceState::running);
    if (id < 0) return false;
    kv_.park(id);
    leave_running(id);
    seqs_[id].state = SequenceState::parked;
    return true;
  }
  bool op_resume() {
    SequenceId id = pick_state(SequenceState::parked);
    if (id < 0) return false;
    kv_.resume(id);
    set_running(id);
    return true;
  }
  bool op_reclaim() {
    SequenceId id = pick_state(SequenceState::parked);
    if (id < 0) return false;
    kv_.reclaim(id);
    retire(id);
    return true;
  }
  bool op_evict() { return kv_.evict_cached(1 + static_cast<int32_t>(below(3))) > 0; }
  bool op_swap_out() {
    SequenceId id = pick_settled(SequenceState::running);
    if (id < 0 || !kv_.can_swap_out(id)) return false;
    kv_.swap_out(id);
    leave_running(id);
    seqs_[id].state = SequenceState::swapped;
    return true;
  }
  bool op_preempt() {
    SequenceId id = pick_settled(SequenceState::running);
    if (id < 0) return false;
    kv_.preempt(id);
    retire(id);
    return true;
  }
  bool op_pressure() {
    make_room(1 + static_cast<int32_t>(below(kNumBlocks)), settled_running());
    return true;
  }
  bool op_discard() {
    SequenceId id = pick_settled(SequenceState::running);
    if (id < 0) return false;
    kv_.discard(id);
    leave_running(id);
    seqs_.erase(id);  // its content is not trusted: no history
    return true;
  }

  // The step's transfers, then its forward writes, on the shadow pool; then every check.
  std::string finish_step() {
    std::vector<BlockTransfer> transfers = kv_.take_transfers();
    std::vector<TransferBatch> batches = batch_transfers(transfers);
    for (size_t i = 0; i < transfers.size(); ++i) num_kind_runs_ += i == 0 || transfers[i].kind != transfers[i - 1].kind;
    num_batches_ += static_cast<int64_t>(batches.size());
    for (const TransferBatch& batch : batches) {
      if (batch.kind == TransferKind::from_disk) {
        for (const BlockCopy& c : batch.pairs) std::copy_n(staging_.at(static_cast<size_t>(c.src)).begin(), bs_, shadow_device_.begin() + c.dst * bs_);
        continue;
      }
      std::vector<int32_t>& src = batch.kind == TransferKind::swap_in ? shadow_host_ : shadow_device_;
      std::vector<int32_t>& dst = batch.kind == TransferKind::swap_out ? shadow_host_ : shadow_device_;
      // A batch may run in any order (it is one parallel launch): run it backwards, so that a
      // batch with a hazard in it would give another result than the manager's order.
      for (auto c = batch.pairs.rbegin(); c != batch.pairs.rend(); ++c)
        std::copy_n(src.begin() + c->src * bs_, bs_, dst.begin() + c->dst * bs_);
    }
    for (auto [slot, token] : writes_) shadow_device_[slot] = token;
    writes_.clear();
    kv_.clear_staged();
    staging_.clear();
    // The blocks this step filled go to disk with their content (unless the disk is full).
    for (const KvManager::SealedBlock& b : kv_.take_sealed()) {
      if (disk_full_steps_ > 0 || disk_.contains(b.hash)) continue;
      const auto at = shadow_device_.begin() + static_cast<ptrdiff_t>(b.block) * bs_;
      disk_[b.hash] = {b.parent_hash, b.tokens, std::vector<int32_t>(at, at + bs_)};
      if (disk_[b.hash].content != b.tokens) return "block " + std::to_string(b.block) + " written to disk with wrong K/V";
    }
    disk_full_steps_ = std::max(disk_full_steps_ - 1, 0);
    for (auto& [id, s] : seqs_) s.appended_this_step = false;
    return check_content();
  }

  std::string check_bookkeeping() {
    for (const KvEvent& e : kv_.take_events()) ++events_[static_cast<size_t>(e.kind)];
    if (std::string err = kv_.check_invariants(); !err.empty()) return "audit: " + err;
    if (std::string err = check_snapshot(); !err.empty()) return "snapshot: " + err;
    for (const auto& [id, s] : seqs_) {
      if (!kv_.has_sequence(id) || kv_.state(id) != s.state) return "seq " + std::to_string(id) + ": state";
      if (kv_.num_tokens(id) != static_cast<int32_t>(s.tokens.size())) return "seq " + std::to_string(id) + ": token count";
      if (static_cast<int64_t>(kv_.block_table(id).size()) != kv_.num_blocks_for(kv_.num_tokens(id)))
        return "seq " + std::to_string(id) + ": table does not cover its tokens";
      if (kv_.stored_tokens(id) != s.tokens) return "seq " + std::to_string(id) + ": stored tokens";
    }
    return {};
  }

  // The pool's accounting, read back through the snapshot and the block tables.
  std::string check_snapshot() const {
    KvSnapshot snap = kv_.snapshot();
    int32_t num[4] = {0, 0, 0, 0};
    int64_t ref_sum = 0, table_refs = 0, host_refs = 0;
    for (const KvBlockInfo& b : snap.blocks) {
      ++num[static_cast<int>(b.state)];
      ref_sum += b.ref_count;
      if ((b.state == BlockState::in_use) != (b.ref_count > 0)) return "a block is both free/cached and in use";
      if (static_cast<int32_t>(b.owners.size()) != b.ref_count) return "a block's owners differ from its ref count";
      if (b.state == BlockState::cached && (!b.has_hash || b.num_filled != bs_)) return "a cached block is not full";
      if (b.state == BlockState::free && b.num_filled != 0) return "a free block holds tokens";
    }
    if (num[0] != kv_.num_free_blocks() || num[1] != kv_.num_used_blocks() || num[2] != kv_.num_cached_blocks() || num[3] != 0)
      return "block state counts differ from the manager's";
    if (num[0] + num[1] + num[2] != kNumBlocks) return "free + cached + used != total";
    int32_t host_used = 0;
    for (const KvBlockInfo& h : snap.host_blocks) {
      if (h.state == BlockState::swapped) ++host_used;
      if (static_cast<int32_t>(h.owners.size()) != (h.state == BlockState::swapped ? 1 : 0)) return "a host block's owners are wrong";
    }
    for (const auto& [id, s] : seqs_) {
      if (s.state == SequenceState::swapped) host_refs += static_cast<int64_t>(kv_.block_table(id).size());
      else table_refs += static_cast<int64_t>(kv_.block_table(id).size());
    }
    if (ref_sum != table_refs) return "sum of ref counts != block-table references";
    if (host_used != host_refs || host_used + kv_.num_free_host_blocks() != kNumHostBlocks) return "host pool accounting";
    KvStats st = kv_.stats();
    if (st.num_running != static_cast<int32_t>(running_.size())) return "running count";
    return {};
  }

  // Every live sequence reads exactly its tokens through its block table, in the shadow pool.
  std::string check_content() const {
    for (const auto& [id, s] : seqs_) {
      std::span<const int32_t> table = kv_.block_table(id);
      const std::vector<int32_t>& shadow = s.state == SequenceState::swapped ? shadow_host_ : shadow_device_;
      for (size_t p = 0; p < s.tokens.size(); ++p)
        if (shadow[static_cast<size_t>(table[p / bs_]) * bs_ + p % bs_] != s.tokens[p])
          return "seq " + std::to_string(id) + ": wrong K/V at position " + std::to_string(p);
    }
    return {};
  }

  int32_t bs_, max_tokens_;
  KvManager kv_;
  std::mt19937_64 rng_;
  std::vector<std::vector<int32_t>> templates_, histories_;
  std::map<SequenceId, Live> seqs_;
  std::vector<SequenceId> running_;  // oldest arrival first
  std::vector<int32_t> shadow_device_, shadow_host_;  // [num_blocks * block_size] token per slot
  std::vector<std::pair<int64_t, int32_t>> writes_;   // this step's forward writes: slot, token
  std::map<std::string, std::pair<int64_t, int64_t>> ops_;
  std::array<int64_t, kNumKvEventKinds> events_{};
  SequenceId next_id_ = 1;
  int64_t num_batches_ = 0, num_kind_runs_ = 0;
  struct DiskBlock {
    uint64_t parent = 0;
    std::vector<int32_t> tokens, content;  // content: the shadow K/V when written
  };
  std::map<uint64_t, DiskBlock> disk_;        // the simulated disk tier, by hash
  std::vector<std::vector<int32_t>> staging_;  // this step's blocks read from disk, by staging id
  int disk_full_steps_ = 0;
  int64_t disk_hits_ = 0;

 public:
  int64_t disk_hits() const { return disk_hits_; }
};

}  // namespace

class TestKvRandomOps : public QObject {
  Q_OBJECT
 private slots:
  void randomOperationsKeepEveryInvariant_data() {
    QTest::addColumn<int>("block_size");
    QTest::addColumn<bool>("weak_hash");
    for (int bs : {1, 4, 8, 16, 32}) QTest::addRow("block_size_%d", bs) << bs << false;
    QTest::addRow("block_size_4_weak_hash") << 4 << true;
  }

  // 6 runs x 24,000 operations = 144,000 operations, each followed by every check. The weak
  // hash keeps 4 bits: most index hits are collisions, and none may serve wrong K/V.
  void randomOperationsKeepEveryInvariant() {
    QFETCH(int, block_size);
    QFETCH(bool, weak_hash);
    BlockHashFn hash;
    if (weak_hash) hash = [](uint64_t parent, std::span<const int32_t> t) { return hash_block_tokens(parent, t) & 0xf; };
    RandomRun run(block_size, 0x9a6ed0c4a7ull + static_cast<uint64_t>(block_size), hash);
    std::string err = run.run(24000);
    QVERIFY2(err.empty(), err.c_str());

    std::string line;
    for (const auto& [name, count] : run.ops())
      line += format(" %s=%lld/%lld", name.c_str(), (long long)count.second, (long long)count.first);
    qInfo("ops done/tried:%s", line.c_str());
    line.clear();
    for (int k = 0; k < kNumKvEventKinds; ++k)
      line += format(" %s=%lld", kv_event_name(static_cast<KvEventKind>(k)), (long long)run.events()[k]);
    qInfo("events:%s", line.c_str());
    qInfo("transfer batches %lld, cut by a hazard %lld", (long long)run.num_batches(), (long long)run.num_hazard_splits());
    KvStats st = run.kv().stats();
    qInfo("prefix hit rate %.3f (%lld/%lld tokens), collisions %lld, lineage misses %lld, cow %lld, evictions %lld, preemptions %lld, "
          "swaps out/in %lld/%lld, reclaims %lld",
          st.prefix_hit_rate(), (long long)st.prefix_hit_tokens, (long long)st.prefix_lookup_tokens,
          (long long)st.num_hash_collisions, (long long)st.num_lineage_misses, (long long)st.num_cow_copies, (long long)st.num_evictions,
          (long long)st.num_preemptions, (long long)st.num_swap_outs, (long long)st.num_swap_ins, (long long)st.num_reclaims);

    // The run reached every path it is meant to check (with one-token blocks no block is ever
    // partial, so there is nothing to copy on write).
    for (const auto& [name, count] : run.ops()) QVERIFY2(count.second >= 50, name.c_str());
    QVERIFY(st.prefix_hit_tokens > 0 && st.num_evictions > 0 && (block_size == 1 || st.num_cow_copies > 0));
    QVERIFY(st.num_preemptions > 0 && st.num_swap_ins > 0 && st.num_reclaims > 0);
    QVERIFY(!weak_hash || st.num_hash_collisions > 1000);
    qInfo("blocks read from disk %lld", (long long)run.disk_hits());
    QVERIFY(run.disk_hits() > (weak_hash ? 0 : 50));
    QCOMPARE(st.num_disk_reads, run.disk_hits());
  }
};

QTEST_APPLESS_MAIN(TestKvRandomOps)
#include "test_kv_random_ops.moc"
