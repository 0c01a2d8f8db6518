#pragma once
// What a client asks of the engine: a prompt to continue, how to sample, and how many samples.

#include <cstdint>
#include <vector>

#include "engine/kv/kv_types.h"
#include "engine/sample/sampling_params.h"

namespace pagedchat {

using RequestId = int64_t;

struct Request {
  std::vector<int32_t> prompt;  // token ids
  SamplingParams params;
  int n = 1;  // parallel samples: the prompt is computed once and forked n ways (seeds seed + i)
  // Keep each finished sequence resident (parked) for a next turn or a fork, instead of
  // freeing it; Engine::release() frees it.
  bool park_when_done = false;
};

}  // namespace pagedchat
