#pragma once
// The engine: many requests served together, one forward pass per step (continuous batching)
// over one paged KV pool. submit/abort/fork/release may be called from any thread: they queue
// a command that the next step() applies. step(), snapshot(), stats() and the subscribers run on
// the engine thread. Preemption is by recompute, or by swap when a host pool is configured.

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/engine/events.h"
#include "engine/engine/request.h"
#include "engine/kv/kv_manager.h"
#include "engine/model/model.h"
#include "engine/scheduler/scheduler.h"

namespace pagedchat {

struct EngineConfig {
  int32_t block_size = 16;
  int32_t num_blocks = 0;           // 0: enough for one sequence of max_context tokens
  int32_t num_host_blocks = 0;      // host pool for swapping; 0: preemption recomputes
  int32_t max_batched_tokens = 512;  // tokens per step
  int32_t max_num_seqs = 64;         // running sequences
  int32_t max_context = 0;           // 0: the model's context length
};

struct EngineStats {
  int64_t num_steps = 0;           // forward passes
  int64_t num_prefill_tokens = 0;  // prompt (and recompute) tokens computed
  int64_t num_decode_tokens = 0;   // decode tokens computed
  int64_t num_generated = 0;       // tokens sampled
  int64_t num_preempted = 0;       // sequences preempted (recompute)
  int64_t num_swapped_out = 0;     // sequences preempted by swap
  int32_t num_waiting = 0, num_running = 0, num_swapped = 0, num_parked = 0;
  KvStats kv;
};

class Engine {
 public:
  // model and backend must outlive the engine; allocates the backend's KV pool.
  Engine(const Model& model, Backend& backend, EngineConfig config);
  ~Engine();

  // --- Any thread -----------------------------------------------------------------------
  RequestId submit(Request request);
  void abort(RequestId id);  // its sequences end ("abort") and free their blocks at the next step
  // Forks a parked sequence (see Request::park_when_done): the child is parked too and shares
  // every block. A parent that is no longer parked gives an error event for the child.
  SequenceId fork(SequenceId parked);
  void release(SequenceId parked);  // frees a parked sequence

  // --- Engine thread --------------------------------------------------------------------
  void subscribe(EventSink sink);
  // Applies the queued commands, then runs one scheduled forward pass and samples. Returns
  // whether anything is left to do (queued commands, waiting or running sequences).
  bool step();
  bool has_work() const;
  KvSnapshot snapshot() const { return kv_.snapshot(); }
  EngineStats stats() const;
  const KvManager& kv() const { return kv_; }

 private:
  struct Live;
  struct Command;

  void apply_commands();
  void start_request(RequestId id, Request request);
  void abort_request(RequestId id, const char* reason);
  void fork_parked(SequenceId parent, SequenceId child);
  void release_parked(SequenceId seq);
  void run_forward(const ScheduledStep& step);
  void fail_batch(const ScheduledStep& step, const std::string& message);
  void after_logits(Live& live, std::span<const float> logits);
  void sample(Live& live, std::span<const float> logits);
  void finish(Live& live, const char* reason);
  void publish(const EngineEvent& e);

  const Model& model_;
  Backend& backend_;
  EngineConfig config_;
  KvManager kv_;
  Scheduler scheduler_;
  std::vector<EventSink> sinks_;
  std::unordered_map<SequenceId, std::unique_ptr<Live>> live_;
  std::unordered_map<RequestId, int> live_per_request_;
  std::unordered_set<SequenceId> parked_;
  uint64_t next_arrival_ = 0;
  EngineStats counters_;
  std::vector<float> logits_;

  mutable std::mutex mutex_;  // guards the fields below
  std::vector<Command> commands_;
  RequestId next_request_ = 1;
  SequenceId next_seq_ = 1;
};

}  // namespace pagedchat
