// One drafted token kept or replaced (see rejection.h).
#include "engine/speculative/rejection.h"

#include <algorithm>
#include <unordered_map>

namespace pagedchat {

int32_t accept_or_resample(const TokenProbs& p, int32_t draft, const TokenProbs* q, Sampler& rng,
                           TokenProbs& residual) {
  if (p.ids.size() == 1) return p.ids[0];  // a point mass: kept exactly when it is the draft
  const double pd = p.prob_of(draft);
  const double qd = q ? q->prob_of(draft) : 1.0;
  if (qd > 0.0 && rng.next_uniform() * qd < pd) return draft;

  // max(0, p - q), over p's tokens (where p is 0 the difference is never positive).
  std::unordered_map<int32_t, double> q_of;
  if (q)
    for (size_t i = 0; i < q->ids.size(); ++i) q_of[q->ids[i]] = q->probs[i];
  else
    q_of[draft] = 1.0;
  residual.ids.clear();
  residual.probs.clear();
  double total = 0.0;
  for (size_t i = 0; i < p.ids.size(); ++i) {
    const int32_t id = p.ids[i];
    auto it = q_of.find(id);
    const double qi = it == q_of.end() ? 0.0 : it->second;
    const double r = std::max(0.0, p.probs[i] - qi);
    if (r <= 0.0) continue;
    residual.ids.push_back(id);
    residual.probs.push_back(r);
    total += r;
  }
  if (residual.ids.empty()) return draft;  // p == q: a rejection cannot happen but by rounding
  return residual.draw(rng.next_uniform() * total);
}

}  // namespace pagedchat
