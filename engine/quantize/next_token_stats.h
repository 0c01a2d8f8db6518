#pragma once
// How far one model's next-token distributions are from a reference's, position by position:
// KL(reference || other), top-1 agreement, and the text's perplexity under each. Shared by
// `bench kv-quality` (the same model with another KV type) and `bench quant-quality` (the same
// model in other weight types). All in double.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace pagedchat {

// log softmax of one row of logits.
inline void log_softmax(const float* logits, int n, std::vector<double>& out) {
  out.resize(static_cast<size_t>(n));
  double mx = -INFINITY;
  for (int i = 0; i < n; ++i) mx = std::max(mx, static_cast<double>(logits[i]));
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += std::exp(logits[i] - mx);
  const double lse = mx + std::log(sum);
  for (int i = 0; i < n; ++i) out[static_cast<size_t>(i)] = logits[i] - lse;
}

struct NextTokenStats {
  std::vector<double> kl;  // per position
  int64_t top1_same = 0;
  double nll = 0.0;        // of the text's next tokens
  int64_t predicted = 0;

  // One position: the reference's and this model's log-probabilities; next < 0 when the text
  // has no next token there.
  void add(const std::vector<double>& ref, const std::vector<double>& other, int32_t next) {
    double k = 0.0;
    for (size_t v = 0; v < ref.size(); ++v) k += std::exp(ref[v]) * (ref[v] - other[v]);
    kl.push_back(std::max(k, 0.0));
    top1_same += std::max_element(other.begin(), other.end()) - other.begin() ==
                 std::max_element(ref.begin(), ref.end()) - ref.begin();
    if (next >= 0) {
      nll -= other[static_cast<size_t>(next)];
      ++predicted;
    }
  }
  double mean_kl() const {
    double s = 0.0;
    for (double k : kl) s += k;
    return kl.empty() ? 0.0 : s / static_cast<double>(kl.size());
  }
  double quantile_kl(double q) const {
    if (kl.empty()) return 0.0;
    std::vector<double> sorted = kl;
    std::sort(sorted.begin(), sorted.end());
    return sorted[std::min(sorted.size() - 1, static_cast<size_t>(static_cast<double>(sorted.size()) * q))];
  }
  double max_kl() const { return kl.empty() ? 0.0 : *std::max_element(kl.begin(), kl.end()); }
  double top1() const { return kl.empty() ? 0.0 : static_cast<double>(top1_same) / static_cast<double>(kl.size()); }
  double perplexity() const { return predicted ? std::exp(nll / static_cast<double>(predicted)) : 0.0; }
};

}  // namespace pagedchat
