#include "engine/sample/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

namespace pagedchat {

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_state_(params.seed) {}

double Sampler::next_uniform() {
  uint64_t z = (rng_state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * (1.0 / 9007199254740992.0);
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history) {
  const auto n = static_cast<int32_t>(logits.size());
  work_.assign(logits.begin(), logits.end());

  // Penalties over the recent window.
  bool penalize = params_.repetition_penalty != 1.0f || params_.frequency_penalty != 0.0f ||
                  params_.presence_penalty != 0.0f;
  if (penalize && !history.empty()) {
    size_t window = params_.penalty_last_n < 0 ? history.size()
                                               : std::min(history.size(), static_cast<size_t>(params_.penalty_last_n));
    std::unordered_map<int32_t, int> counts;
    for (size_t i = history.size() - window; i < history.size(); ++i)
      if (history[i] >= 0 && history[i] < n) ++counts[history[i]];
    for (auto [id, count] : counts) {
      float& l = work_[id];
      if (params_.repetition_penalty != 1.0f) l = l > 0 ? l / params_.repetition_penalty : l * params_.repetition_penalty;
      l -= params_.frequency_penalty * static_cast<float>(count) + params_.presence_penalty;
    }
  }

  if (params_.temperature == 0.0f) {
    // First index of the maximum: ties go to the lowest id.
    return static_cast<int32_t>(std::max_element(work_.begin(), work_.end()) - work_.begin());
  }

  // Candidates sorted by logit (ties by id), cut by top-k.
  ids_.resize(n);
  std::iota(ids_.begin(), ids_.end(), 0);
  auto by_logit = [&](int32_t a, int32_t b) { return work_[a] > work_[b] || (work_[a] == work_[b] && a < b); };
  size_t keep = params_.top_k > 0 ? std::min<size_t>(params_.top_k, n) : n;
  std::partial_sort(ids_.begin(), ids_.begin() + keep, ids_.end(), by_logit);
  ids_.resize(keep);

  // Softmax with temperature over the candidates (double for a stable sum).
  std::vector<double> probs(keep);
  const double max_logit = work_[ids_[0]];
  double sum = 0.0;
  for (size_t i = 0; i < keep; ++i) {
    probs[i] = std::exp((work_[ids_[i]] - max_logit) / params_.temperature);
    sum += probs[i];
  }
  for (double& p : probs) p /= sum;

  // min-p, then top-p (nucleus): always keep at least the best token.
  size_t cut = keep;
  if (params_.min_p > 0.0f) {
    double floor = params_.min_p * probs[0];
    cut = 1;
    while (cut < keep && probs[cut] >= floor) ++cut;
  }
  if (params_.top_p < 1.0f) {
    double acc = 0.0;
    size_t i = 0;
    for (; i < cut; ++i) {
      acc += probs[i];
      if (acc >= params_.top_p) break;
    }
    cut = std::min(cut, i + 1);
  }
  double total = 0.0;
  for (size_t i = 0; i < cut; ++i) total += probs[i];

  double r = next_uniform() * total;
  for (size_t i = 0; i < cut; ++i) {
    r -= probs[i];
    if (r < 0.0) return ids_[i];
  }
  return ids_[cut - 1];
}

}  // namespace pagedchat
