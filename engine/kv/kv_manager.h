#pragma once
// The paged KV manager: which physical block holds which tokens of which sequence. Many
// sequences share one pool of fixed-size blocks through the prefix cache and copy-on-write
// forks; parked sequences stay resident between turns; under pressure parked sequences are
// released, then cached blocks evicted, then running ones preempted (recompute or swap).
// Bookkeeping only: the K/V bytes live in the backend, which performs the transfers listed
// here (take_transfers()) before the step's forward pass.
//
// Check, then act. Queries are const; each mutation has a precondition a query checks:
//   new prompt:  PrefixHit hit = find_prefix(prompt);
//                if (num_blocks_to_start(hit, n) <= num_available_blocks()) {
//                  start(seq, hit); append(seq, prompt.subspan(hit.num_tokens, n), slot_mapping); }
//   decode / next prefill chunk:  if (can_append(seq, n)) append(seq, tokens, slot_mapping);
//   pressure (a step needs k blocks and num_free_blocks() < k):
//                apply(plan_reclaim(k, running_by_arrival, mode));
//                then the appends evict cached blocks (LRU) for what free blocks do not cover.
// A PrefixHit or ReclaimPlan is valid until the next mutation.
//
// A step: the scheduler's calls, then take_transfers() run in order, then the forward pass.
// Tokens given to append() count as stored from then on: the engine must write their K/V in
// that step's forward pass (a block they fill is indexed by the prefix cache at once, as in
// vLLM, so a prompt started later in the same step may read it; the CPU backend writes a layer's
// K/V for the whole batch before that layer's attention). Hence, within a step, fork, park,
// release, preempt or swap out a sequence before appending to it, never after (a copy or swap
// made after the append would run before the forward pass writes the appended tokens). If the
// forward pass fails, discard() the sequences of the batch so that the blocks they filled are
// not served from the cache.
//
// Bad calls (an unknown sequence, a failed precondition) are our bugs and assert. Input from
// a user is checked by the caller with fits_ever() and the can_* queries.

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/kv/block_hash.h"
#include "engine/kv/block_pool.h"
#include "engine/kv/host_pool.h"
#include "engine/kv/kv_events.h"
#include "engine/kv/kv_snapshot.h"
#include "engine/kv/kv_stats.h"
#include "engine/kv/kv_transfers.h"
#include "engine/kv/kv_types.h"

namespace pagedchat {

// The block sizes the pool (and the attention kernels' block tables) take: powers of two to 32.
constexpr bool is_valid_block_size(int32_t bs) { return bs >= 1 && bs <= 32 && (bs & (bs - 1)) == 0; }
inline constexpr const char* kValidBlockSizes = "1, 2, 4, 8, 16 or 32";

struct KvManagerConfig {
  int32_t num_blocks = 0;       // device pool
  int32_t block_size = 16;      // tokens per block: 1, 2, 4, 8, 16 or 32
  int32_t num_host_blocks = 0;  // host pool for swapping; 0: preemption always recomputes
  uint64_t model_id = 0;        // roots every block hash: caches of two models never match
  BlockHashFn hash_fn = {};     // empty: hash_block_tokens (tests inject collisions here)
};

// The cached full blocks a prompt starts with. The prompt's last token is always computed:
// when every block of a prompt would hit, its last block is left out and recomputed whole
// (vLLM v1 does the same), so num_tokens < the prompt's length.
struct PrefixHit {
  std::vector<int32_t> blocks;    // [num_hit_blocks] physical ids, in prompt order
  // The staged disk blocks (KvManager::stage) that follow them, by hash: each takes a fresh block,
  // filled by a from_disk transfer from the caller's staging id.
  std::vector<uint64_t> staged;
  int32_t num_tokens = 0;         // (blocks.size() + staged.size()) * block_size
  int32_t num_revived = 0;        // of blocks, those now cached (ref 0): each uses one available block
  int32_t num_prompt_tokens = 0;  // the prompt's length (for the hit-rate stat)
  MatchKind stop = MatchKind::miss;  // why the walk stopped (miss also when it reached the end)
  uint64_t root_hash = 0;         // the chain's root: the pool's, or the pool's mixed with a cache salt
};

// What plan_reclaim() decided; apply() releases, then swaps out, then preempts.
struct ReclaimPlan {
  std::vector<SequenceId> reclaim;   // parked sequences to release, least recently used first
  std::vector<SequenceId> preempt;   // running sequences to free for recompute
  std::vector<SequenceId> swap_out;  // running sequences to move to the host pool
  int32_t num_blocks_needed = 0;
  int32_t num_free_after = 0;       // projected empty blocks
  int32_t num_available_after = 0;  // projected free + cached blocks
  bool enough = false;              // num_available_after >= num_blocks_needed
};

class KvManager {
 public:
  // Throws Error on a bad configuration (the block size and pool size come from the user).
  explicit KvManager(KvManagerConfig config);

  // --- Pool -----------------------------------------------------------------------------
  int32_t block_size() const { return pool_.block_size(); }
  int32_t num_blocks() const { return pool_.num_blocks(); }
  int32_t num_host_blocks() const { return host_.num_blocks(); }
  int32_t num_free_blocks() const { return pool_.num_free(); }          // empty
  int32_t num_cached_blocks() const { return pool_.num_cached(); }      // ref 0, content kept
  int32_t num_used_blocks() const { return pool_.num_used(); }          // ref >= 1
  int32_t num_available_blocks() const { return pool_.num_available(); }  // free + cached
  int32_t num_free_host_blocks() const { return host_.num_free(); }
  // Blocks that hold num_tokens tokens.
  int64_t num_blocks_for(int64_t num_tokens) const;
  // Whether a sequence of num_tokens tokens fits in the pool even with everything else
  // released: false means the request can never run.
  bool fits_ever(int64_t num_tokens) const { return num_blocks_for(num_tokens) <= num_blocks(); }

  // --- Sequences ------------------------------------------------------------------------
  bool has_sequence(SequenceId seq) const { return seqs_.count(seq) != 0; }
  SequenceState state(SequenceId seq) const { return get(seq).state; }
  int32_t num_tokens(SequenceId seq) const { return get(seq).num_tokens; }
  // Logical block i -> physical block: device ids, or host ids while swapped.
  std::span<const int32_t> block_table(SequenceId seq) const { return get(seq).block_table; }
  // The token ids the sequence's blocks hold, read through its block table.
  std::vector<int32_t> stored_tokens(SequenceId seq) const;
  // Appends the slots (block_id * block_size + offset) of positions [start, start + n).
  // The sequence must be on the device and hold those positions.
  void slot_mapping(SequenceId seq, int32_t start, int32_t n, std::vector<int64_t>& out) const;

  // --- New prompts ----------------------------------------------------------------------
  // Walks the prompt's full blocks through the prefix cache; stops at the first miss.
  // cache_salt != 0: the prompt's blocks hash from a root of their own (mixed with the salt), so
  // they match only blocks of sequences started with the same salt (vLLM's cache_salt: one
  // client cannot learn from cache hits what another sent). 0: the pool's common root.
  PrefixHit find_prefix(std::span<const int32_t> prompt, uint64_t cache_salt = 0) const;
  // Blocks that start() and a first append of num_new_tokens take from the available ones.
  int32_t num_blocks_to_start(const PrefixHit& hit, int32_t num_new_tokens) const;
  // Creates running sequence `seq` holding the hit blocks (ref + 1 each; cached ones revived).
  // It then holds hit.num_tokens tokens; append() the rest of the prompt.
  void start(SequenceId seq, const PrefixHit& hit);

  // --- Growth ---------------------------------------------------------------------------
  // Blocks that appending n tokens takes: new blocks, plus one when the partial last block is
  // shared and must be copied first. Summed over several operations it can only overestimate.
  int32_t num_blocks_to_append(SequenceId seq, int32_t n) const;
  bool can_append(SequenceId seq, int32_t n) const { return num_blocks_to_append(seq, n) <= num_available_blocks(); }
  // Appends tokens to a running sequence and their slots to slot_mapping. A shared partial
  // last block is first copied to a fresh block (a copy transfer); a block the tokens fill is
  // hashed and indexed by the prefix cache. Precondition: can_append(seq, tokens.size()).
  void append(SequenceId seq, std::span<const int32_t> tokens, std::vector<int64_t>& slot_mapping);

  // --- Fork, rewind and park ------------------------------------------------------------
  // `child` (new) shares every block of `parent` (running or parked), the partial last block
  // included; it runs. No block is taken: the first write into a shared block copies it.
  void fork(SequenceId parent, SequenceId child);
  // Cuts a sequence on the device back to its first num_tokens tokens (0 <= num_tokens <=
  // num_tokens(seq)): the blocks past the cut lose this sequence's reference (a `free` event
  // each, full ones stay cached), and the block holding token num_tokens - 1 keeps its slots.
  // That block may then hold more than the sequence does: shared, the next append copies the
  // kept prefix first (copy-on-write); this sequence's alone, it is shrunk at once. With
  // fork(), a fork at any token; it is also how rejected draft tokens and pruned beams go.
  void rewind(SequenceId seq, int32_t num_tokens);
  void park(SequenceId seq);    // running -> parked (most recently used)
  void resume(SequenceId seq);  // parked -> running

  // --- Release --------------------------------------------------------------------------
  // Frees a sequence in any state (finished or aborted). Its full indexed blocks that nobody
  // else holds become cached; the rest become free.
  void free(SequenceId seq);
  // Like free(), but blocks that drop to no reference lose their content: for sequences whose
  // appended tokens were never computed (the step's forward failed).
  void discard(SequenceId seq);
  // Releases a parked sequence under pressure (free() with a reclaim event).
  void reclaim(SequenceId seq);
  // Frees a running sequence to be recomputed later (re-prefill through the prefix cache).
  void preempt(SequenceId seq);
  // Evicts up to n cached blocks, least recently used first; returns how many.
  int32_t evict_cached(int32_t n);

  // --- Swap -----------------------------------------------------------------------------
  bool can_swap_out(SequenceId seq) const;
  // Moves a running sequence to the host pool: one swap_out transfer per block; its device
  // references are dropped as by free(). Precondition: can_swap_out(seq).
  void swap_out(SequenceId seq);
  // Blocks swap_in() takes: full blocks whose content is in use on the device are shared
  // again instead of copied.
  int32_t num_blocks_to_swap_in(SequenceId seq) const;
  bool can_swap_in(SequenceId seq) const { return num_blocks_to_swap_in(seq) <= num_available_blocks(); }
  // Brings a swapped sequence back (running): content found in the prefix cache is shared or
  // revived, the rest arrives by swap_in transfers. Precondition: can_swap_in(seq).
  void swap_in(SequenceId seq);

  // --- Pressure -------------------------------------------------------------------------
  // Blocks that would become available (free or cached) if these sequences released theirs.
  int32_t num_blocks_freed_by(std::span<const SequenceId> seqs) const;
  // Plans how to have num_blocks_needed available blocks with as many empty as possible:
  // parked sequences are released (least recently used first) while the free blocks fall
  // short; cached blocks count as available (the appends evict them, LRU); if still short,
  // running sequences are preempted from the back of running_by_arrival (latest arrival
  // first; the caller leaves out those it must keep). Mode swap moves a victim to the host
  // pool when it has room, else it is recomputed.
  ReclaimPlan plan_reclaim(int32_t num_blocks_needed, std::span<const SequenceId> running_by_arrival,
                           PreemptMode mode) const;
  void apply(const ReclaimPlan& plan);

  // --- Disk tier (engine/kv/disk) ---------------------------------------------------------
  // A prompt's full blocks past those the pool (and the staged blocks) serve, up to max_blocks:
  // what the caller may look for on disk, in order. Empty when the pool's walk stopped on a
  // collision or a lineage miss (the disk would not be asked past those either).
  struct ChainBlock {
    uint64_t hash = 0, parent_hash = 0;
    int32_t first_token = 0;  // the block's tokens are prompt[first_token, first_token + block_size)
  };
  std::vector<ChainBlock> chain_past_hits(std::span<const int32_t> prompt, uint64_t cache_salt, int32_t max_blocks) const;
  // A block read from disk, under the caller's staging id: find_prefix() continues a prompt's
  // walk through staged blocks whose parent and tokens match, and start() gives each one it
  // uses a fresh block (a from_disk transfer, then the block is full and indexed as if computed).
  void stage(uint64_t hash, uint64_t parent_hash, std::span<const int32_t> tokens, int32_t staging_id);
  // The hashes of every full block of `tokens`, in order (under the salt's root, as find_prefix).
  std::vector<uint64_t> chain_hashes(std::span<const int32_t> tokens, uint64_t cache_salt) const;
  uint64_t content_hash(int32_t block) const { return pool_.block(block).content.hash; }  // 0 while partial
  // Drops a staged block, if `staging_id` is still the one staged under its hash.
  void unstage(uint64_t hash, int32_t staging_id) {
    if (auto it = staged_.find(hash); it != staged_.end() && it->second.id == staging_id) staged_.erase(it);
  }
  void clear_staged() { staged_.clear(); }
  // Blocks that became full since the last call, in order: once the step's forward pass has run
  // they hold their tokens' K/V, and may be written to disk (a block since emptied is left out).
  struct SealedBlock {
    int32_t block = 0;
    uint64_t hash = 0, parent_hash = 0;
    std::vector<int32_t> tokens;
  };
  std::vector<SealedBlock> take_sealed();
  void track_sealed(bool on) { track_sealed_ = on; }  // off (the default): none are kept
  void record_disk_write(int32_t block);  // a disk_write event for a sealed block

  // --- Output ---------------------------------------------------------------------------
  // The transfers made since the last call, in order (see kv_transfers.h).
  std::vector<BlockTransfer> take_transfers() { return std::exchange(transfers_, {}); }
  std::vector<KvEvent> take_events() { return events_.take(); }
  void set_event_sink(KvEventLog::Sink sink) { events_.set_sink(std::move(sink)); }
  // bytes_per_block: Backend::kv_block_bytes(), for the byte figures.
  KvStats stats(uint64_t bytes_per_block = 0) const;
  KvSnapshot snapshot() const;
  // Checks every bookkeeping invariant (ref counts against block tables, lists against
  // states, the prefix index against block contents, tables against token counts, the host
  // pool); returns the first violation found, or an empty string. O(pool + tables).
  std::string check_invariants() const;

 private:
  struct Sequence {
    SequenceState state = SequenceState::running;
    std::vector<int32_t> block_table;  // [num_blocks_for(num_tokens)] device or host ids
    int32_t num_tokens = 0;
    uint64_t last_used = 0;  // parked LRU order
    uint64_t root_hash = 0;  // its first block's parent hash (the pool's root, or a salted one)
  };
  struct Counters {
    int64_t lookup_tokens = 0, hit_tokens = 0, lookup_collisions = 0, lookup_lineage = 0;
    int64_t allocations = 0, evictions = 0;
    int64_t cow_copies = 0, preemptions = 0, swap_outs = 0, swap_ins = 0, reclaims = 0;
    int64_t disk_hit_tokens = 0, disk_reads = 0, disk_writes = 0;
  };
  struct Staged {
    uint64_t parent_hash = 0;
    std::vector<int32_t> tokens;
    int32_t id = 0;
  };

  const Sequence& get(SequenceId seq) const;
  Sequence& get(SequenceId seq);
  bool on_device(const Sequence& s) const { return s.state != SequenceState::swapped; }
  int32_t take_block(SequenceId seq);  // allocates (evicting if needed) with events
  void drop_ref(SequenceId seq, int32_t block, bool keep_content);
  void release(SequenceId seq, KvEventKind why, bool keep_content);
  void record(KvEventKind kind, SequenceId seq, int32_t block = -1, int64_t peer = -1);
  void copy_on_write(SequenceId seq, Sequence& s);
  void seal_last(Sequence& s);
  std::string check_pool() const;
  std::string check_sequences() const;
  std::string check_index() const;

  KvManagerConfig config_;
  BlockPool pool_;
  HostPool host_;
  uint64_t root_hash_;
  std::unordered_map<SequenceId, Sequence> seqs_;
  uint64_t clock_ = 0;  // ticks on park
  std::vector<BlockTransfer> transfers_;
  KvEventLog events_;
  Counters counters_;
  std::unordered_map<uint64_t, Staged> staged_;  // by hash
  std::vector<int32_t> sealed_;                  // since take_sealed(), when track_sealed_
  bool track_sealed_ = false;
};

}  // namespace pagedchat
