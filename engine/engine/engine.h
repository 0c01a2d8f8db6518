#pragma once
// The engine: many requests served together, one forward pass per step (continuous batching)
// over one paged KV pool. submit/abort/fork/release may be called from any thread: they queue
// a command that the next step() applies. step(), snapshot(), stats() and the subscribers run on
// the engine thread. Preemption is by recompute, or by swap when a host pool is configured.

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/engine/events.h"
#include "engine/engine/prompt_rate.h"
#include "engine/engine/step_cost.h"
#include "engine/engine/request.h"
#include "engine/grammar/token_masker.h"
#include "engine/kv/disk/kv_disk_store.h"
#include "engine/kv/kv_manager.h"
#include "engine/model/model.h"
#include "engine/scheduler/scheduler.h"
#include "engine/speculative/drafter.h"
#include "engine/speculative/speculation_policy.h"

namespace pagedchat {

struct EngineConfig {
  int32_t block_size = 16;
  int32_t num_blocks = 0;           // 0: enough for one sequence of max_context tokens
  int32_t num_host_blocks = 0;      // host pool for swapping; 0: preemption recomputes
  int32_t max_batched_tokens = 512;  // tokens per step
  int32_t max_num_seqs = 64;         // running sequences
  int32_t max_context = 0;           // 0: the model's context length
  // Speculative decoding: null drafter, none. Decoding sequences get drafted tokens that one
  // forward pass verifies; the output is what it would be without them (greedy: token for
  // token; sampled: the same distribution).
  std::shared_ptr<Drafter> drafter;
  SpeculationConfig speculation;
  // The disk tier under the pool (engine/kv/disk): full blocks written to this folder as they are
  // computed, and read back for a prompt whose prefix left memory (evicted, or another run). Empty
  // dir: none. A backend that cannot copy blocks out (Backend::kv_layout() empty) runs without.
  KvDiskConfig kv_disk;
};

struct SequenceView {
  SequenceState state = SequenceState::running;
  int32_t num_stored = 0;            // tokens whose K/V the pool holds
  std::vector<int32_t> block_table;  // [num blocks] logical -> physical block (host ids while swapped)
};

struct EngineStats {
  int64_t num_steps = 0;           // forward passes
  int64_t num_prefill_tokens = 0;     // prompt tokens computed (each at most once)
  int64_t num_recomputed_tokens = 0;  // tokens computed again because preemption dropped their K/V
  int64_t num_decode_tokens = 0;      // generated tokens computed (each at most once)
  int64_t num_generated = 0;       // tokens sampled
  int64_t num_preempted = 0;       // sequences preempted (recompute)
  int64_t num_swapped_out = 0;     // sequences preempted by swap
  int64_t num_draft_tokens = 0;    // drafted tokens verified (computed in a decode chunk)
  int64_t num_accepted_tokens = 0;  // of those, kept
  int64_t num_spec_decodes = 0;    // decode chunks that verified drafts
  int64_t num_plain_decodes = 0;   // decode chunks without drafts
  int64_t num_masked_tokens = 0;   // positions sampled under a grammar (structured output)
  int64_t num_forced_tokens = 0;   // tokens a grammar forced, appended without sampling (jump-forward)
  double mask_seconds = 0.0;       // spent finding those positions' allowed tokens
  int64_t num_mask_cache_hits = 0; // of those, masks the grammar's state cache answered
  int64_t num_mask_walks = 0;      // vocabulary walks the others needed (token_masker.h)
  int32_t num_waiting = 0, num_running = 0, num_swapped = 0, num_parked = 0;
  int32_t num_held = 0;            // sequences held by their clients (Engine::hold), in any queue
  KvStats kv;
  bool disk_tier = false;          // a disk tier is open (EngineConfig::kv_disk)
  KvDiskStats disk;
};

// What one step computed, for a timeline of continuous batching: each scheduled chunk (a
// prompt chunk, a recompute, or a decode) and the sequences the step moved out or back.
struct StepRecord {
  struct Chunk {
    SequenceId seq = -1;
    int32_t start = 0;        // first token position computed
    int32_t num_tokens = 0;
    bool is_decode = false;   // the sequence's next token (else prompt or recompute work)
    int32_t num_recomputed = 0;  // of num_tokens, those a preemption had dropped
    int32_t num_logits = 0;      // rows whose logits were taken (the last of a prompt, a decode and its drafts)
  };
  int64_t step_index = 0;  // EngineStats::num_steps after it
  std::vector<Chunk> chunks;  // in batch order
  // The forward pass: its wall time, and what it computed and read as its shapes count them
  // (step_cost.h). Zero for a step of transfers only.
  double forward_seconds = 0.0;
  // A mixture of experts: the experts the forward pass ran, summed over its layers, each counted
  // once however many tokens chose it (the weights it read); -1 when the backend does not say.
  int64_t experts_run = -1;
  StepCost cost;
  std::vector<SequenceId> preempted, swapped_out, swapped_in, reclaimed;
  bool empty() const { return chunks.empty() && preempted.empty() && swapped_out.empty() && swapped_in.empty(); }
  int32_t num_tokens() const {  // computed in the step, every chunk's
    int32_t n = 0;
    for (const Chunk& c : chunks) n += c.num_tokens;
    return n;
  }
};

class Engine {
 public:
  // model and backend must outlive the engine; allocates the backend's KV pool.
  Engine(const Model& model, Backend& backend, EngineConfig config);
  ~Engine();

  // --- Any thread -----------------------------------------------------------------------
  RequestId submit(Request request);
  void abort(RequestId id);  // its sequences end ("abort") and free their blocks at the next step
  // Holds a request's sequences back (a client that reads its stream too slowly) or lets them
  // go on: held, they keep their place and blocks but are not scheduled, and are the first to
  // be preempted when memory runs short. Their output is unchanged by the pause.
  void hold(RequestId id, bool held);
  // Forks a sequence between two steps; the child shares every block of the parent
  // (copy-on-write: the first append into the shared partial last block copies it).
  // - Parked parent (see Request::park_when_done): the child is parked too.
  // - Running parent that is decoding: the child runs at once, as another sample of the same
  //   request (its token and finished events carry the parent's request id, the child's seq
  //   and the request's next unused index). It holds the parent's tokens, the last sampled one
  //   (not yet computed) included, and its reply text so far (held-back text too), and counts
  //   the parent's generated tokens against max_tokens. Sampling params are the parent's, but
  //   the sampler starts afresh from a seed mixed from the parent's seed and the child's id: a
  //   copy of the parent's generator would repeat its draws, and a fixed derivation keeps runs
  //   reproducible. With greedy sampling the child continues exactly as the parent does.
  // Any other parent (unknown, finished, released, reclaimed, still waiting or prefilling its
  // prompt, or swapped out) gives an error event for the child (request -1, seq = the child)
  // and changes nothing else.
  // at_token >= 0 (a parked parent only): the child holds the parent's first at_token tokens
  // (1 <= at_token <= what the parent stores): it shares every block up to the cut, the
  // partial block at the cut included (copy-on-write at its first write), so nothing is
  // computed until the child's new tokens. -1: all of them.
  SequenceId fork(SequenceId parent, int32_t at_token = -1);
  // Cuts a parked sequence back to its first num_tokens tokens (0 <= num_tokens <= what it
  // stores): the blocks past the cut are freed (full ones stay in the prefix cache), so a
  // continuation from there computes only its new tokens. A bad call gives an error event
  // (request -1, seq = the sequence) and changes nothing.
  void rewind(SequenceId parked, int32_t num_tokens);
  void release(SequenceId parked);  // frees a parked sequence

  // --- Engine thread --------------------------------------------------------------------
  void subscribe(EventSink sink);
  // Applies the queued commands, then runs one scheduled forward pass and samples. Returns
  // whether anything is left to do (queued commands, waiting or running sequences).
  bool step();
  bool has_work() const;
  KvSnapshot snapshot() const;  // the KV manager's, with the blocks the disk tier holds marked
  EngineStats stats() const;
  // The disk tier: removes the files of `tokens`' full blocks (a deleted chat's history) except
  // those that a prefix in `keep` (the other chats' histories) also has. Returns how many went.
  int forget_on_disk(std::span<const int32_t> tokens, const std::vector<std::vector<int32_t>>& keep, uint64_t cache_salt = 0);
  // The disk tier holds the block of this prefix hash (KvManager::chain_hashes), or is writing
  // it; false without a tier.
  bool on_disk(uint64_t hash) const { return disk_ && disk_->has(hash); }
  // What the last step() scheduled (empty when it had nothing to run).
  const StepRecord& last_step() const { return last_step_; }
  // About how long computing prompt positions [start, start + num_tokens) of one sequence
  // takes here, from the rate this engine's prompt steps ran at (or an earlier run's, saved with
  // the disk tier); 0 while none is known.
  double prompt_seconds(int32_t start, int32_t num_tokens) const;
  // What a client may read of one resident sequence (a parked chat's, a running sample's):
  // nothing when the KV manager holds no such sequence (finished, released, reclaimed).
  std::optional<SequenceView> sequence(SequenceId seq) const;
  std::vector<int32_t> stored_tokens(SequenceId seq) const;  // empty when not resident
  int32_t block_size() const { return config_.block_size; }
  int32_t max_context() const { return config_.max_context; }
  // The KV manager itself, for the engine's own tests (invariants after every operation);
  // clients read through the queries above, so the KV manager's API can change under them.
  const KvManager& kv() const { return kv_; }

 private:
  struct Live;
  struct Command;
  struct BeamGroup;

  void apply_commands();
  void start_request(RequestId id, Request request);
  void abort_request(RequestId id, const char* reason);
  void hold_request(RequestId id, bool held);
  void fork_sequence(SequenceId parent, SequenceId child, int32_t at_token);
  void fork_parked(SequenceId parent, SequenceId child, int32_t at_token);
  void rewind_parked(SequenceId seq, int32_t num_tokens);
  void fork_running(Live& parent, SequenceId child);
  Live& add_child(Live& parent, SequenceId child, const SamplingParams& params);
  void fork_error(SequenceId parent, SequenceId child, const std::string& why);
  void sequence_error(SequenceId seq, const std::string& message);
  void count_computed(const ScheduledChunk& c);
  void release_parked(SequenceId seq);
  void run_forward(const ScheduledStep& step);
  void record_step(const ScheduledStep& step);
  void fail_batch(const ScheduledStep& step, const std::string& message);
  void after_logits(Live& live, std::span<const float> logits);
  // The tokens the grammar of `matcher` allows next (a sequence with structured output).
  const grammar::TokenMask& allowed_tokens(const grammar::GrammarMatcher& matcher);
  // A grammar that allows no token of this vocabulary: the sequence ends with an error.
  void grammar_dead_end(Live& live);
  void sample(Live& live, std::span<const float> logits);
  // Appends the text the sequence's grammar forces next (SamplingParams::jump_forward).
  void jump_forward(Live& live);
  // Appends `text`'s tokens as if sampled (jump-forward's, a thinking budget's end), computed
  // in one chunk; false when the sequence ended on one of them (`live` is gone).
  bool append_forced(Live& live, const std::string& text, bool counts_as_forced);
  // A thinking reply's token: the thinking goes on, or ends with this token (what follows the
  // end marker is the answer's, fed to the grammar).
  void follow_reasoning(Live& live, const std::string& piece);
  bool take_token(Live& live, int32_t next, std::span<const float> logits);
  EngineEvent token_event(Live& live, int32_t token, const std::string& piece);
  bool at_length_limit(const Live& live) const;
  SequenceId new_sequence_id();
  // The disk tier (engine_disk_tier.cpp).
  void open_disk_tier();
  void stage_from_disk();           // before the schedule: waiting prompts' blocks found on disk
  void load_from_disk(std::span<const BlockCopy> pairs);  // the from_disk transfers
  void take_disk_reads();           // the chains the store's reader has read: staged
  void drop_stale_staging();        // what no waiting sequence needs now
  void write_sealed_to_disk();      // after the forward pass: the blocks it filled
  void save_prompt_rate();          // to the disk tier's folder, for the next run
  void propose_drafts();
  void verify_drafts(Live& live, const ScheduledChunk& c, std::span<const float> rows);
  void drop_unverified_drafts();
  void beam_logits(Live& live, std::span<const float> logits);
  void select_beams(BeamGroup& group);
  void end_beam_search(BeamGroup& group);
  void drop_beam(Live& live);
  void finish(Live& live, const char* reason);
  void publish(const EngineEvent& e);
  // The prefix-cache figures of a request's token and finished events.
  void set_cache_figures(EngineEvent& e, RequestId request);

  const Model& model_;
  Backend& backend_;
  EngineConfig config_;
  KvManager kv_;
  Scheduler scheduler_;
  std::vector<EventSink> sinks_;
  std::unordered_map<SequenceId, std::unique_ptr<Live>> live_;
  struct RequestCount {
    int num_live = 0;     // sequences still generating; the entry goes when it reaches 0
    int num_samples = 0;  // indices given out: the next sample (n > 1 or a fork) gets this one
    int64_t num_cache_hit_blocks = 0;  // prefix-cache hits before its first sampled token (disk reads included)
    bool sampled = false;              // a token was sampled (later hits are not prompt reuse)
    int64_t num_disk_blocks = 0;       // of the hits, blocks read from disk
    double disk_read_seconds = 0.0;    // the time its blocks took to read
    int64_t disk_start_block = 0;      // the first block read from disk: the pool's hits before it
    int64_t estimated_disk_blocks = 0; // the num_disk_blocks disk_prompt_seconds was estimated for
    double disk_prompt_seconds = 0.0;  // prompt_seconds() of those blocks
  };
  std::unordered_map<RequestId, RequestCount> requests_;
  std::unordered_set<SequenceId> parked_;
  std::unordered_map<RequestId, std::unique_ptr<BeamGroup>> beams_;
  uint64_t next_arrival_ = 0;
  EngineStats counters_;
  StepRecord last_step_;
  StepCostModel step_cost_;  // the model's shapes, for each step's cost
  PromptRate prompt_rate_;   // measured on the prompt steps
  std::vector<float> logits_;
  std::vector<SequenceId> drafted_;  // sequences given drafts this step
  TokenProbs target_probs_, residual_;
  std::unique_ptr<grammar::TokenMasker> masker_;  // made at the first request with a grammar
  std::vector<float> masked_logits_;               // a beam's logits under its grammar
  std::unique_ptr<KvDiskStore> disk_;
  struct StagedBytes {
    SequenceId for_seq = -1;       // the waiting sequence whose prompt it continues
    uint64_t hash = 0;
    std::vector<uint8_t> bytes;
  };
  std::unordered_map<int32_t, StagedBytes> staging_;  // by staging id, until loaded or dropped
  int32_t next_staging_id_ = 0;
  size_t staged_bytes_ = 0, inflight_bytes_ = 0;  // staged, and reserved by the reads under way
  struct PendingRead {
    SequenceId seq = -1;
    std::vector<KvManager::ChainBlock> chain;
    size_t reserved = 0;  // of inflight_bytes_
  };
  std::unordered_map<int64_t, PendingRead> pending_reads_;  // by the store's ticket
  // A chain's first block being read for one sequence, and the others whose prompts start there
  // too: they wait for that read rather than read the same files again.
  std::unordered_map<uint64_t, std::vector<SequenceId>> read_followers_;
  std::unordered_set<SequenceId> disk_looked_up_;          // waiting sequences whose chain was asked for

  mutable std::mutex mutex_;  // guards the fields below
  std::vector<Command> commands_;
  RequestId next_request_ = 1;
  SequenceId next_seq_ = 1;
};

}  // namespace pagedchat
