// Paged causal attention, the slow and obvious way: per (token, head), scores in double, max,
// exp, normalize, weighted sum of values.
#include "kernels/reference/attention_reference.h"

#include <cmath>
#include <vector>

namespace pagedchat::kernels {
namespace {

template <typename Traits, typename T>
void attend(const PagedKvView<const T>& kv, const AttentionRows& r) {
  const int hd = kv.head_dim;
  const int group = r.num_heads / kv.num_kv_heads;
  std::vector<double> scores;
  for (int s = 0; s < r.num_seqs; ++s) {
    const int q_len = r.cu_seqlens_q[s + 1] - r.cu_seqlens_q[s];
    for (int i = 0; i < q_len; ++i) {
      const int t = r.cu_seqlens_q[s] + i;
      const int pos = r.seq_lens[s] - q_len + i;
      for (int h = 0; h < r.num_heads; ++h) {
        const int kvh = h / group;
        const float* q = r.q + (static_cast<int64_t>(t) * r.num_heads + h) * hd;
        scores.assign(pos + 1, 0.0);
        double m = -INFINITY;
        for (int j = 0; j <= pos; ++j) {
          const T* k = kv.key(s, j, kvh);
          double dot = 0.0;
          for (int d = 0; d < hd; ++d) dot += static_cast<double>(q[d]) * Traits::load(k[d]);
          scores[j] = dot * r.scale;
          m = std::max(m, scores[j]);
        }
        double sum = 0.0;
        for (double& x : scores) sum += (x = std::exp(x - m));
        float* o = r.out + (static_cast<int64_t>(t) * r.num_heads + h) * hd;
        for (int d = 0; d < hd; ++d) {
          double acc = 0.0;
          for (int j = 0; j <= pos; ++j) acc += scores[j] * Traits::load(kv.value(s, j, kvh)[d]);
          o[d] = static_cast<float>(acc / sum);
        }
      }
    }
  }
}

}  // namespace

void attention_reference(const PagedKvView<const uint16_t>& kv, KvDtype dtype, const AttentionRows& rows) {
  if (dtype == KvDtype::F16)
    attend<KvF16>(kv, rows);
  else
    attend<KvBf16>(kv, rows);
}

void attention_reference(const PagedKvView<const float>& kv, const AttentionRows& rows) { attend<KvF32>(kv, rows); }

}  // namespace pagedchat::kernels
