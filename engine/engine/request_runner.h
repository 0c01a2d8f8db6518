#pragma once
// One request run to its end on the calling thread, which must be the engine thread (it calls
// step()): the synchronous client that the CLI's generate and bench, the app's worker and the
// tests share, so each of them takes the engine's one path. Text streams out as the token
// events carry it (ReplyText inside the engine made it); the prompt and the decode are timed.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine/engine.h"
#include "engine/engine/request_tracker.h"

namespace pagedchat {

struct RequestRun {
  RequestId id = -1;
  SequenceId seq = -1;
  std::vector<int32_t> tokens;    // sampled ids, in order (an end-of-generation token excluded)
  std::string text;               // the reply as shown: whole UTF-8 characters, stop strings cut
  std::string finish_reason;      // "stop", "length", "abort", "error"
  std::string error;              // the error event's message; empty when the request ran
  bool parked = false;            // the sequence stays resident (Request::park_when_done)
  int64_t num_prompt_tokens = 0;  // prompt tokens computed (fewer on a cache hit or a parked sequence)
  double prompt_seconds = 0.0;    // submit to the first sampled token
  double decode_seconds = 0.0;    // the first sampled token to the end
  SpeculationCounts spec;         // drafted and kept tokens, decode steps

  bool ok() const { return error.empty(); }
};

class RequestRunner {
 public:
  // Subscribes to the engine's events through its RequestTracker (an engine cannot
  // unsubscribe, so the runner must outlive every later step() of the engine).
  explicit RequestRunner(Engine& engine);
  RequestRunner(const RequestRunner&) = delete;
  RequestRunner& operator=(const RequestRunner&) = delete;

  // Submits `request` (its n must be 1) and steps the engine until the request ends. on_text
  // gets the text as it can be shown. should_abort is asked before every step, so a stop is
  // seen even while tokens produce no text; true aborts the request (finish "abort").
  RequestRun run(Request request, const std::function<void(std::string_view)>& on_text = {},
                 const std::function<bool()>& should_abort = {});

  // Any n (samples, or a beam search's hypotheses): submits `request`, steps the engine until it
  // ends and returns its whole output (error set if the engine went idle without ending it).
  // after_step runs after every step (to watch the engine's stats, say).
  RequestOutput run_all(Request request, const std::function<void()>& after_step = {});

  Engine& engine() { return engine_; }

 private:
  // Steps until request `id` ends; false when the engine went idle first (our bug).
  bool step_until_done(RequestId id, const std::function<void(const RequestUpdate&)>& on_update,
                       const std::function<bool()>& should_abort, const std::function<void()>& after_step);

  Engine& engine_;
  RequestTracker tracker_;
  bool running_ = false;
};

}  // namespace pagedchat
