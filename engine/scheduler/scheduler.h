#pragma once
// The continuous-batching scheduler: picks one step's work under a token budget and a cap on
// running sequences. Decode tokens of running sequences first, then the rest of prompts being
// prefilled in chunks, then new prompts (FCFS), each started through the prefix cache. Under
// memory pressure parked sequences are released, then running ones preempted (the latest
// arrival first) by recompute, or by swap to the host pool when the mode says so and it has
// room; swapped sequences come back, oldest first, before any new prompt. Held sequences are
// skipped everywhere and preempted before any other. It decides and applies the KV calls of a step in one place and
// in the order the KV manager needs (preempt before append); it runs no model.

#include <cstdint>
#include <deque>
#include <vector>

#include "engine/kv/kv_manager.h"

namespace pagedchat {

// What the scheduler knows of a sequence. The owner (the engine) keeps it alive while added.
struct SchedSequence {
  SequenceId id = -1;
  uint64_t arrival = 0;          // FCFS order; a fork child shares its parent's
  std::vector<int32_t> tokens;   // prompt and generated tokens so far
  int32_t num_computed = 0;      // tokens whose K/V is stored (== the KV manager's count)
  bool in_kv = false;            // started in the KV manager (running)
  bool swapped = false;          // in the KV manager's host pool
  bool prefilled = false;        // its tokens were all computed once: one token a step since
  int32_t num_recompute = 0;     // tokens [0, n) were computed once, then dropped by preemption
  // The last num_draft tokens are drafted (speculative decoding), not sampled: a decode then
  // computes the last sampled token and its drafts in one chunk. Drafts only use what is
  // spare: the scheduler cuts them to the token budget and the free blocks (it never
  // preempts or reclaims for them) and drops them from a sequence it does not schedule.
  int32_t num_draft = 0;
  uint64_t cache_salt = 0;       // its prompt matches cached blocks of this salt only (KvManager::find_prefix)
  // Held by its client (a reader that fell behind): not scheduled, not swapped back in; it keeps
  // its blocks, but is the first to be preempted when another sequence needs memory.
  bool held = false;
  // Its prompt's blocks are being read from disk (the engine's disk tier): not admitted until
  // they are staged, so the step that admits it finds them (KvManager::stage).
  bool disk_wait = false;

  int32_t num_remaining() const { return static_cast<int32_t>(tokens.size()) - num_computed; }
};

struct SchedulerConfig {
  int32_t max_batched_tokens = 512;  // tokens per forward pass
  int32_t max_num_seqs = 64;         // running sequences
  PreemptMode preempt_mode = PreemptMode::recompute;
};

// One sequence's share of a step: tokens [start, start + num_tokens) of seq->tokens.
struct ScheduledChunk {
  SchedSequence* seq = nullptr;
  int32_t start = 0;
  int32_t num_tokens = 0;
  bool is_decode = false;  // a running sequence's next token (else prompt / recompute work)
  int32_t num_recomputed = 0;  // of num_tokens, those a preemption dropped (computed before)
  std::vector<int64_t> slot_mapping;  // [num_tokens] from KvManager::append: where their K/V goes
  bool wants_logits() const { return start + num_tokens == static_cast<int32_t>(seq->tokens.size()); }
  // Rows of logits the chunk needs: its last token's, and with drafts one before each draft.
  int32_t num_logits() const { return wants_logits() ? 1 + (is_decode ? seq->num_draft : 0) : 0; }
};

struct ScheduledStep {
  std::vector<ScheduledChunk> chunks;      // in batch order
  std::vector<SequenceId> preempted;       // running sequences sent back to waiting (recompute)
  std::vector<SequenceId> swapped_out;     // running sequences moved to the host pool
  std::vector<SequenceId> swapped_in;      // back from the host pool, running again
  std::vector<SequenceId> reclaimed;       // parked sequences the KV manager released
  int32_t num_tokens = 0;
  bool empty() const { return chunks.empty(); }
};

class Scheduler {
 public:
  explicit Scheduler(SchedulerConfig config);

  // A sequence to prefill (not in the KV manager); queued by arrival.
  void add_waiting(SchedSequence* seq);
  // A sequence already running in the KV manager (a fork child).
  void add_running(SchedSequence* seq);
  // Forgets a sequence (finished or aborted); the caller frees its KV.
  void remove(SequenceId id);

  // Plans this step and applies its KV calls: afterwards every chunk's tokens are appended in
  // `kv`, with the slots append gave in chunk.slot_mapping (nothing later in the step changes a
  // scheduled sequence's block table: only unscheduled ones are preempted or swapped out); the
  // caller runs the transfers and the forward.
  ScheduledStep schedule(KvManager& kv);

  int32_t num_waiting() const { return static_cast<int32_t>(waiting_.size()); }
  const std::deque<SchedSequence*>& waiting() const { return waiting_; }  // by arrival
  int32_t num_running() const { return static_cast<int32_t>(running_.size()); }
  int32_t num_swapped() const { return static_cast<int32_t>(swapped_.size()); }
  // Whether any sequence can be scheduled (held ones wait for their client).
  bool has_work() const;

 private:
  bool make_room(KvManager& kv, SchedSequence* seq, int32_t num_blocks, ScheduledStep& step);
  void send_back(SchedSequence* seq, ScheduledStep& step);
  void send_to_host(SchedSequence* seq, ScheduledStep& step);
  static void drop_drafts(SchedSequence* seq, int32_t keep);
  void schedule_running(KvManager& kv, bool decode, int32_t& budget, ScheduledStep& step);
  void schedule_waiting(KvManager& kv, int32_t& budget, ScheduledStep& step);
  void swap_in(KvManager& kv, ScheduledStep& step);

  SchedulerConfig config_;
  std::deque<SchedSequence*> waiting_;   // by arrival
  std::vector<SchedSequence*> running_;  // by arrival
  std::deque<SchedSequence*> swapped_;   // by arrival
};

}  // namespace pagedchat
