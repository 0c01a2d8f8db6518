// Checking a request's sampling parameters, with a message naming the bad one.
#include "engine/sample/sampling_params.h"

#include <cmath>

#include "engine/common/error.h"

namespace pagedchat {

std::string SamplingParams::validate() const {
  if (!(temperature >= 0.0f) || !std::isfinite(temperature)) return format("temperature %g must be >= 0", temperature);
  if (top_k < 0) return format("top_k %d must be >= 0", top_k);
  if (!(top_p > 0.0f && top_p <= 1.0f)) return format("top_p %g must be in (0, 1]", top_p);
  if (!(min_p >= 0.0f && min_p <= 1.0f)) return format("min_p %g must be in [0, 1]", min_p);
  if (!(repetition_penalty > 0.0f) || !std::isfinite(repetition_penalty))
    return format("repetition_penalty %g must be > 0", repetition_penalty);
  if (!std::isfinite(frequency_penalty) || std::fabs(frequency_penalty) > 2.0f)
    return format("frequency_penalty %g must be in [-2, 2]", frequency_penalty);
  if (!std::isfinite(presence_penalty) || std::fabs(presence_penalty) > 2.0f)
    return format("presence_penalty %g must be in [-2, 2]", presence_penalty);
  if (penalty_last_n < -1) return format("penalty_last_n %d must be >= -1", penalty_last_n);
  if (max_tokens < 1) return format("max_tokens %d must be >= 1", max_tokens);
  if (num_logprobs < -1 || num_logprobs > 20) return format("num_logprobs %d must be -1 (off) to 20", num_logprobs);
  for (const auto& s : stop)
    if (s.empty()) return "stop strings must not be empty";
  for (const auto& [id, bias] : logit_bias) {
    if (id < 0) return format("logit_bias token %d must be >= 0", id);
    if (!std::isfinite(bias) || std::fabs(bias) > 100.0f) return format("logit_bias %g (token %d) must be in [-100, 100]", bias, id);
  }
  return {};
}

}  // namespace pagedchat
