#pragma once
// Speculative decoding from options, the same in the CLI, the server and the app: prompt lookup
// ("ngram", "ngram:K") or a draft model (a GGUF path; it runs on the CPU backend, on a KV pool
// of its own), set on an EngineConfig as its drafter and K.

#include <cstdint>
#include <string>

#include "engine/engine/engine.h"
#include "engine/model/model.h"

namespace pagedchat {

struct SpeculationOptions {
  std::string speculate;     // "", "off", "ngram" or "ngram:K" (K 1-16)
  std::string draft_model;   // a GGUF sharing the target's vocabulary; exclusive with ngram
  int32_t draft_tokens = 0;  // K for the draft model (1-16); 0: the default
  bool adaptive = true;      // false: always the whole proposal up to K (to measure acceptance)
  int threads = 0;           // the draft model's CPU threads, 0 = all cores
};

// Throws Error naming the problem (a bad --speculate, both drafters, a draft model that cannot
// load or does not share the vocabulary) before anything is set. config.block_size, num_blocks
// and max_context are read: the draft pool holds as many tokens as the target's (at least one
// context).
void configure_speculation(const SpeculationOptions& options, const Model& target, EngineConfig& config);

// "ngram, K = 6, adaptive" or "draft model SmolLM2-135M (K = 4, adaptive)": for the stats lines.
std::string speculation_description(const SpeculationOptions& options, const EngineConfig& config);

}  // namespace pagedchat
