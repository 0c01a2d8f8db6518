#include "engine/backend/cpu/expert_routing.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace pagedchat::cpu {

void route_experts(const float* logits, int64_t num_tokens, const ModelConfig& c, int32_t* experts, float* weights) {
  const int n = c.num_experts, k = c.num_experts_used;
  thread_local std::vector<float> probs;
  thread_local std::vector<int32_t> order;
  probs.resize(static_cast<size_t>(n));
  order.resize(static_cast<size_t>(n));
  for (int64_t t = 0; t < num_tokens; ++t) {
    const float* z = logits + t * n;
    if (c.expert_gating == ExpertGating::kSoftmaxOfTopK) {
      // gpt-oss: the k largest logits, then the softmax of those k.
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + k, order.end(),
                        [&](int32_t a, int32_t b) { return z[a] > z[b] || (z[a] == z[b] && a < b); });
      int32_t* chosen = experts + t * k;
      float* w = weights + t * k;
      const float top = z[order[0]];
      float sum = 0.0f;
      for (int s = 0; s < k; ++s) {
        chosen[s] = order[s];
        sum += w[s] = std::exp(z[order[s]] - top);
      }
      for (int s = 0; s < k; ++s) w[s] /= sum;
      continue;
    }
    const float top = *std::max_element(z, z + n);
    double sum = 0.0;
    for (int e = 0; e < n; ++e) sum += probs[e] = std::exp(z[e] - top);
    for (int e = 0; e < n; ++e) probs[e] = static_cast<float>(probs[e] / sum);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int32_t a, int32_t b) { return probs[a] > probs[b] || (probs[a] == probs[b] && a < b); });
    int32_t* chosen = experts + t * k;
    float* w = weights + t * k;
    float chosen_sum = 0.0f;
    for (int s = 0; s < k; ++s) {
      chosen[s] = order[s];
      w[s] = probs[order[s]];
      chosen_sum += w[s];
    }
    const float divisor = c.expert_weights_norm ? std::max(chosen_sum, 6.103515625e-5f) : 1.0f;
    for (int s = 0; s < k; ++s) w[s] = w[s] / divisor;
  }
}

void group_by_expert(const int32_t* experts, int64_t num_tokens, int slots_per_token, int num_experts,
                     ExpertGroups& groups) {
  const int64_t num_entries = num_tokens * slots_per_token;
  groups.offset.assign(static_cast<size_t>(num_experts) + 1, 0);
  for (int64_t i = 0; i < num_entries; ++i) ++groups.offset[experts[i] + 1];
  for (int e = 0; e < num_experts; ++e) groups.offset[e + 1] += groups.offset[e];
  groups.entries.resize(static_cast<size_t>(num_entries));
  std::vector<int32_t> next(groups.offset.begin(), groups.offset.end() - 1);
  for (int64_t i = 0; i < num_entries; ++i) groups.entries[next[experts[i]]++] = static_cast<int32_t>(i);
}

}  // namespace pagedchat::cpu
