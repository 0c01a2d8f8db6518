#pragma once
// Per-request outputs of an engine, keyed by request id: what each client of the engine (the
// CLI's runner, the server's router, the app's bridge) would otherwise rebuild from the event
// stream by itself. It keeps, for each request it tracks, every sample's tokens, text, finish
// reason and timing, the request's error and prefix-cache figure, and the events since the
// last take_updates(); a request is done at the event the engine marks request_done. The shape
// of llama.cpp's server_response and of vLLM's per-request outputs.
//
// Not thread-safe: its owner calls everything on one thread at a time (the engine thread,
// or under the owner's lock). Events arrive inside Engine::step(); track() a request before
// the step that runs it (right after submit, before the next step()).

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/engine/engine.h"

namespace pagedchat {

struct SampleOutput {
  SequenceId seq = -1;
  std::vector<int32_t> tokens;  // sampled ids, in order (an end-of-generation token excluded)
  std::string text;             // the reply as shown: whole UTF-8 characters, stop strings cut
  std::string finish_reason;    // "stop", "length", "abort", "error"; empty while generating
  bool finished = false;
  bool parked = false;          // finished and still resident (Request::park_when_done)
  double first_token_at = -1;   // seconds since track(); -1 before the first token
  double last_token_at = 0;
  SpeculationCounts spec;       // drafts verified and kept, decode steps (speculative decoding)
  double cumulative_logprob = 0;  // beam search: the hypothesis' summed log-probability
  double beam_score = 0;          // and its rank score
  bool beam = false;              // a beam-search hypothesis (its tokens came at the end, at once)
};

struct RequestOutput {
  RequestId id = -1;
  std::vector<SampleOutput> samples;       // [n], by sample index
  std::string error;                       // the error event's message; empty when it ran
  int64_t num_cached_prompt_tokens = 0;    // prompt tokens the prefix cache served (disk reads included)
  int64_t num_disk_prompt_tokens = 0;      // of those, read from disk
  double disk_read_seconds = 0;            // the reading's time
  double disk_prompt_seconds = 0;          // about what computing them would have taken (0: not known)
  std::set<SequenceId> sequences;          // every sequence its events named (pool labels)
  bool done = false;
  double done_at = 0;                      // seconds since track()

  bool ok() const { return error.empty(); }
};

// What one request produced since the previous take_updates().
struct RequestUpdate {
  RequestId id = -1;
  std::vector<EngineEvent> events;       // its token, finished and error events, in order
  int64_t num_cached_prompt_tokens = 0;  // so far
  bool done = false;                     // the request's last update
};

class RequestTracker {
 public:
  using Clock = std::function<double()>;  // seconds, monotonic
  // Subscribes to the engine (an engine cannot unsubscribe: the tracker must outlive every
  // later step() of it, or be muted with detach()). clock: empty for steady_clock.
  explicit RequestTracker(Engine& engine, Clock clock = {});
  // Unsubscribed: the owner feeds it every event with on_event() (an owner that outlives
  // several engines, and keeps the events of an old one away by itself).
  explicit RequestTracker(Clock clock = {});
  RequestTracker(const RequestTracker&) = delete;
  RequestTracker& operator=(const RequestTracker&) = delete;

  // Starts tracking a submitted request of num_samples samples (Request::n).
  void track(RequestId id, int num_samples);
  // Stops tracking (done and handled, or a client that went away); later events are ignored.
  void forget(RequestId id);
  // The engine is going away: its events are ignored from now on.
  void detach() { detached_ = true; }
  void on_event(const EngineEvent& e);
  // The request fails without the engine saying so (a step threw, the engine is going away):
  // an error event marked request_done is added to its pending events. The caller aborts it
  // in the engine if the engine lives on; what the engine says of it later is ignored.
  void fail(RequestId id, const std::string& message);
  void fail_all(const std::string& message);

  bool tracks(RequestId id) const { return entries_.count(id) != 0; }
  // The request's output so far; null when it is not tracked.
  const RequestOutput* output(RequestId id) const;
  // The requests that produced events since the last call, in request order. A request stays
  // tracked after its done update until forget() or take_output().
  std::vector<RequestUpdate> take_updates();
  // The request's whole output, moved out; forgets it.
  RequestOutput take_output(RequestId id);
  std::vector<RequestId> tracked() const;
  // The tracked request a sequence belongs to (-1: none), from the events seen so far.
  RequestId request_of(SequenceId seq) const;

 private:
  struct Entry {
    RequestOutput output;
    std::vector<EngineEvent> pending;
    double started_at = 0;
  };
  double now() const;

  Clock clock_;
  bool detached_ = false;
  std::map<RequestId, Entry> entries_;
};

}  // namespace pagedchat
