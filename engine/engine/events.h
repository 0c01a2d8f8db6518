#pragma once
// What the engine tells its subscribers: generated tokens, finished sequences, errors, and the
// KV manager's events, in the order they happened. Delivered on the engine thread in step().

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine/request.h"
#include "engine/kv/kv_events.h"

namespace pagedchat {

enum class EngineEventKind : uint8_t {
  token,     // sequence `seq` (sample `index` of `request`) produced `token`; `text` is what
             // can be shown now (UTF-8 completed, stop strings held back)
  finished,  // the sequence ended: reason "stop" (EOS or a stop string), "length" (max_tokens,
             // the context, or the whole pool), "abort", "error" (after the error event);
             // `text` is the held-back tail; `parked` when it stays resident
  error,     // the request failed (bad input, a prompt that can never fit, a failed step)
  kv,        // a KV manager event (`kv`); `request` is set while the sequence is generating
};

// Speculative decoding of one sequence so far: drafted tokens verified, those kept, and the
// decode steps its generated tokens took (tokens per step: generated / decode_steps).
struct SpeculationCounts {
  int64_t drafted = 0, accepted = 0, decode_steps = 0;
};

struct EngineEvent {
  EngineEventKind kind = EngineEventKind::token;
  RequestId request = -1;
  SequenceId seq = -1;
  int index = 0;         // which of the request's n samples
  int32_t token = -1;
  std::string text;
  std::string reason;    // finished: why; error: the message
  bool parked = false;
  // The request's last event: its last sequence finished, or the error that refused it. Exactly
  // one per submitted request, so a client waits for it rather than for n finished events (a
  // failed request may end without one for each of its n samples: the error came before they
  // were forked).
  bool request_done = false;
  // token and finished events: prompt tokens of the request the prefix cache served (its
  // cache-hit blocks before its first sampled token, times the block size; later hits are a
  // preempted sequence finding its own blocks again, not prompt reuse).
  int64_t num_cached_prompt_tokens = 0;
  // Of those, the tokens whose blocks were read from disk (EngineConfig::kv_disk), and the time
  // the reading took.
  int64_t num_disk_prompt_tokens = 0;
  double disk_read_seconds = 0.0;
  double disk_prompt_seconds = 0.0;  // about what computing those tokens would have taken (0: not known)
  KvEvent kv;
  // token events of a request that asked for them (SamplingParams::num_logprobs >= 0):
  // log-probability of `token` and the most likely tokens, most likely first.
  float logprob = 0.0f;
  std::vector<std::pair<int32_t, float>> top_logprobs;
  SpeculationCounts spec;  // token and finished events: the sequence's, up to this event
  // Beam search's finished events: the hypothesis' sum of log-probabilities (its EOS included)
  // and its rank score (that sum / tokens ^ length_penalty).
  double cumulative_logprob = 0.0;
  double beam_score = 0.0;
  bool beam = false;  // token and finished events of a beam-search hypothesis
};

using EventSink = std::function<void(const EngineEvent&)>;

const char* engine_event_name(EngineEventKind k);

}  // namespace pagedchat
