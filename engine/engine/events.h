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

struct EngineEvent {
  EngineEventKind kind = EngineEventKind::token;
  RequestId request = -1;
  SequenceId seq = -1;
  int index = 0;         // which of the request's n samples
  int32_t token = -1;
  std::string text;
  std::string reason;    // finished: why; error: the message
  bool parked = false;
  KvEvent kv;
  // token events of a request that asked for them (SamplingParams::num_logprobs >= 0):
  // log-probability of `token` and the most likely tokens, most likely first.
  float logprob = 0.0f;
  std::vector<std::pair<int32_t, float>> top_logprobs;
};

using EventSink = std::function<void(const EngineEvent&)>;

const char* engine_event_name(EngineEventKind k);

}  // namespace pagedchat
