#pragma once
// A synthetic chat workload for the benchmarks: prompt and output lengths drawn log-normal like
// real chat traffic, a shared system prompt on a share of the requests, random token ids; all
// from one seed, so two runs (and two machines) push the same requests.

#include <cstdint>
#include <vector>

namespace pagedchat {

struct SyntheticChatConfig {
  uint64_t seed = 1;
  int num_requests = 64;
  // Prompt length (system prompt included): log-normal, median and sigma of the log, clipped.
  double prompt_median = 150.0, prompt_sigma = 0.9;
  int prompt_min = 16, prompt_max = 1024;
  // Output length: log-normal, clipped.
  double output_median = 100.0, output_sigma = 0.9;
  int output_min = 8, output_max = 512;
  // Share of the requests that open with the same system prompt of system_prompt_len tokens.
  double system_prompt_share = 0.5;
  int system_prompt_len = 64;
  int32_t vocab_size = 49152;  // token ids are drawn in [0, vocab_size)
};

struct SyntheticRequest {
  std::vector<int32_t> prompt;
  int32_t output_len = 0;
  bool has_system_prompt = false;
};

// Throws Error on a configuration that cannot produce a workload (empty vocabulary, bounds
// out of order, a system prompt longer than the longest prompt).
std::vector<SyntheticRequest> make_synthetic_chat(const SyntheticChatConfig& config);

// Random prompts of one fixed length (no shared prefix, as far as random ids go), for the
// fixed-length benchmark mode.
std::vector<std::vector<int32_t>> make_random_prompts(uint64_t seed, int num_prompts, int len, int32_t vocab_size);

}  // namespace pagedchat
