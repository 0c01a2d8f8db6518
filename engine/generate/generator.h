#pragma once
// Single-stream generation for the CLI: prefill the prompt in chunks, then decode one token
// per forward pass until EOS, a stop string or the length limit. One sequence, paged KV from
// a simple allocator. (The multi-sequence engine with the KV manager is engine/ of issue 3.)

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/model/model.h"
#include "engine/sample/sampling_params.h"

namespace pagedchat {

struct GeneratorConfig {
  int block_size = 16;
  int max_batch_tokens = 512;  // prompt chunk size
  int max_context = 0;         // 0: the model's context length
};

struct GenerationResult {
  std::vector<int32_t> tokens;   // generated ids (the stop token excluded)
  std::string text;              // generated text (stop strings removed)
  std::string finish_reason;     // "stop" (EOS or stop string), "length", "cancelled"
  int prompt_tokens = 0;
  double prompt_seconds = 0.0;
  double decode_seconds = 0.0;   // from the first sampled token to the end
  std::vector<std::vector<float>> logits;  // per step, when keep_logits
};

class Generator {
 public:
  Generator(const Model& model, Backend& backend, GeneratorConfig config);

  // on_text gets text as it is produced (never half a UTF-8 character); return false to stop.
  // should_stop is asked before every step, so a stop is seen even while tokens produce no
  // text (control tokens, a held-back stop-string prefix).
  GenerationResult generate(std::span<const int32_t> prompt, const SamplingParams& params,
                            const std::function<bool(std::string_view)>& on_text = {}, bool keep_logits = false,
                            const std::function<bool()>& should_stop = {});

 private:
  const Model& model_;
  Backend& backend_;
  GeneratorConfig config_;
};

}  // namespace pagedchat
