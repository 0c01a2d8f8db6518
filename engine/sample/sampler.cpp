// Sampling one token from a row of logits (see sampler.h for the order of the steps).
#include "engine/sample/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>

#include "engine/common/error.h"

namespace pagedchat {

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_state_(params.seed) {}

double Sampler::next_uniform() {
  uint64_t z = (rng_state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * (1.0 / 9007199254740992.0);
}

double TokenProbs::prob_of(int32_t id) const {
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] == id) return probs[i];
  return 0.0;
}

int32_t TokenProbs::draw(double u) const {
  for (size_t i = 0; i < ids.size(); ++i) {
    u -= probs[i];
    if (u < 0.0) return ids[i];
  }
  return ids.back();
}

// work_ = the logits with the penalties over the recent window applied, and the tokens a
// grammar forbids at minus infinity.
void Sampler::penalize(std::span<const float> logits, std::span<const int32_t> history, const uint64_t* allowed) {
  const auto n = static_cast<int32_t>(logits.size());
  work_.assign(logits.begin(), logits.end());
  for (float l : work_)
    if (!std::isfinite(l)) throw Error("the model produced a non-finite logit; its weights are likely corrupt");
  for (const auto& [id, bias] : params_.logit_bias)
    if (id < n) work_[id] += bias;  // ids past the vocabulary are refused before a request runs
  if (allowed)
    for (int32_t i = 0; i < n; ++i)
      if (!((allowed[i / 64] >> (i % 64)) & 1)) work_[i] = -std::numeric_limits<float>::infinity();
  bool penalize = params_.repetition_penalty != 1.0f || params_.frequency_penalty != 0.0f ||
                  params_.presence_penalty != 0.0f;
  if (!penalize || history.empty()) return;
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

// The filtered candidates of a temperature draw from work_: ids_ by falling logit, probs_ their
// softmax; the first `cut` of them are the ones min-p and top-p keep (their probabilities are
// not renormalized here).
size_t Sampler::candidates() {
  const auto n = static_cast<int32_t>(work_.size());
  const float max_logit = *std::max_element(work_.begin(), work_.end());
  // Candidates: only tokens whose probability can matter. Below max - T * ln(1e12) a token's
  // weight is under 1e-12 of the best one's; dropping those first keeps the sort small (a
  // full-vocabulary sort per token cost more than the forward pass of a small model).
  const float floor_logit = max_logit - params_.temperature * 27.631f;
  ids_.clear();
  for (int32_t i = 0; i < n; ++i)
    if (work_[i] >= floor_logit) ids_.push_back(i);
  auto by_logit = [&](int32_t a, int32_t b) { return work_[a] > work_[b] || (work_[a] == work_[b] && a < b); };
  size_t keep = params_.top_k > 0 ? std::min<size_t>(params_.top_k, ids_.size()) : ids_.size();
  std::partial_sort(ids_.begin(), ids_.begin() + keep, ids_.end(), by_logit);
  ids_.resize(keep);

  // Softmax with temperature over the candidates (double for a stable sum).
  probs_.resize(keep);
  double sum = 0.0;
  for (size_t i = 0; i < keep; ++i) {
    probs_[i] = std::exp((work_[ids_[i]] - max_logit) / params_.temperature);
    sum += probs_[i];
  }
  for (double& p : probs_) p /= sum;

  // min-p, then top-p (nucleus): always keep at least the best token.
  size_t cut = keep;
  if (params_.min_p > 0.0f) {
    double floor = params_.min_p * probs_[0];
    cut = 1;
    while (cut < keep && probs_[cut] >= floor) ++cut;
  }
  if (params_.top_p < 1.0f) {
    double acc = 0.0;
    size_t i = 0;
    for (; i < cut; ++i) {
      acc += probs_[i];
      if (acc >= params_.top_p) break;
    }
    cut = std::min(cut, i + 1);
  }
  return cut;
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history, const uint64_t* allowed) {
  penalize(logits, history, allowed);
  const auto n = static_cast<int32_t>(work_.size());
  if (params_.temperature == 0.0f) {
    // First index of the maximum: ties go to the lowest id.
    return static_cast<int32_t>(std::max_element(work_.begin(), work_.end()) - work_.begin());
  }

  if (params_.top_k == 0 && params_.top_p >= 1.0f && params_.min_p == 0.0f) {
    // No filter: draw over the whole vocabulary in id order, no sort needed.
    const float max_logit = *std::max_element(work_.begin(), work_.end());
    const float inv_t = 1.0f / params_.temperature;
    double total = 0.0;
    for (int32_t i = 0; i < n; ++i) {
      work_[i] = std::exp((work_[i] - max_logit) * inv_t);
      total += work_[i];
    }
    double r = next_uniform() * total;
    for (int32_t i = 0; i < n; ++i) {
      r -= work_[i];
      if (r < 0.0) return i;
    }
    return static_cast<int32_t>(std::max_element(work_.begin(), work_.end()) - work_.begin());
  }

  const size_t cut = candidates();
  double total = 0.0;
  for (size_t i = 0; i < cut; ++i) total += probs_[i];
  double r = next_uniform() * total;
  for (size_t i = 0; i < cut; ++i) {
    r -= probs_[i];
    if (r < 0.0) return ids_[i];
  }
  return ids_[cut - 1];
}

void Sampler::distribution(std::span<const float> logits, std::span<const int32_t> history, TokenProbs& out,
                           const uint64_t* allowed) {
  penalize(logits, history, allowed);
  out.ids.clear();
  out.probs.clear();
  if (params_.temperature == 0.0f) {
    out.ids.push_back(static_cast<int32_t>(std::max_element(work_.begin(), work_.end()) - work_.begin()));
    out.probs.push_back(1.0);
    return;
  }
  // The no-filter draw of sample() covers the same tokens as the candidates with no filter
  // (those under 1e-12 of the best weigh nothing in a double sum of the whole vocabulary).
  const size_t cut = candidates();
  double total = 0.0;
  for (size_t i = 0; i < cut; ++i) total += probs_[i];
  out.ids.assign(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(cut));
  for (size_t i = 0; i < cut; ++i) out.probs.push_back(probs_[i] / total);
}

}  // namespace pagedchat
