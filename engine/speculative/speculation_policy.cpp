// The draft-length plan (see speculation_policy.h).
#include "engine/speculative/speculation_policy.h"

#include <algorithm>
#include <cmath>
#include <queue>

namespace pagedchat {

namespace {
constexpr double kDecay = 0.9;  // per verification: about the last 10 matter
constexpr double kFade = 0.97;  // per step without drafts
}  // namespace

void AcceptanceEstimate::observe(int32_t drafted, int32_t accepted) {
  if (drafted <= 0) return;
  kept_ = kept_ * kDecay + accepted;
  rejected_ = rejected_ * kDecay + (accepted < drafted ? 1.0 : 0.0);
}

void AcceptanceEstimate::fade() {
  kept_ *= kFade;
  rejected_ *= kFade;
}

// Greedy on value / cost: the j-th drafted token of a sequence is kept with probability
// acceptance^j (all before it kept), for a cost of token_cost + draft_cost. The step so far
// yields `tokens` expected tokens for `cost` (units of a one-token step); a token of value v
// raises tokens / cost exactly when v / c exceeds it. Values fall along each sequence, so taking
// the best remaining one each time is optimal for this model.
std::vector<int32_t> plan_draft_lengths(std::span<const DraftCandidate> candidates, int32_t num_decoding,
                                        const SpeculationConfig& config, double draft_cost, int32_t budget) {
  std::vector<int32_t> k(candidates.size(), 0);
  const int32_t cap = std::max(config.max_draft_tokens, 0);
  if (!config.adaptive) {
    for (size_t i = 0; i < candidates.size() && budget > 0; ++i) {
      k[i] = std::min({candidates[i].max_tokens, cap, budget});
      budget -= k[i];
    }
    return k;
  }
  const double unit = config.token_cost + draft_cost;
  double tokens = std::max(num_decoding, 1);
  double cost = 1.0 + config.token_cost * (tokens - 1.0);
  using Next = std::pair<double, size_t>;  // value of the sequence's next draft, which
  std::priority_queue<Next> next;
  for (size_t i = 0; i < candidates.size(); ++i)
    if (std::min(candidates[i].max_tokens, cap) > 0) next.push({candidates[i].acceptance, i});
  while (!next.empty() && budget > 0) {
    auto [value, i] = next.top();
    next.pop();
    if (value * cost <= tokens * unit) break;
    tokens += value;
    cost += unit;
    --budget;
    if (++k[i] < std::min(candidates[i].max_tokens, cap)) next.push({value * candidates[i].acceptance, i});
  }
  return k;
}

}  // namespace pagedchat
