// Log-softmax of one row of logits, for the chosen token and the top few.
#include "engine/sample/logprobs.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace pagedchat {

TokenLogprobs token_logprobs(std::span<const float> logits, int32_t chosen, int num_top) {
  TokenLogprobs out;
  if (logits.empty()) return out;
  // log-sum-exp with the max taken out, so large logits do not overflow.
  const float max = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float x : logits) sum += std::exp(static_cast<double>(x - max));
  const float log_z = max + static_cast<float>(std::log(sum));
  if (chosen >= 0 && static_cast<size_t>(chosen) < logits.size()) out.logprob = logits[static_cast<size_t>(chosen)] - log_z;
  const size_t k = std::min(static_cast<size_t>(std::max(num_top, 0)), logits.size());
  if (k == 0) return out;
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(), [&](int32_t a, int32_t b) {
    return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)] ||
           (logits[static_cast<size_t>(a)] == logits[static_cast<size_t>(b)] && a < b);
  });
  for (size_t i = 0; i < k; ++i) out.top.emplace_back(ids[i], logits[static_cast<size_t>(ids[i])] - log_z);
  return out;
}

}  // namespace pagedchat
