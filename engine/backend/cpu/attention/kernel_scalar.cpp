// The scalar attention kernel: the definition of the bits every SIMD kernel reproduces.
#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/backend/cpu/attention/attention_kernel.h"
#include "engine/common/exp_approx.h"

namespace pagedchat::cpu {
namespace {

void load_tile(KvType type, const uint8_t* const* key_rows, const uint8_t* const* value_rows, int n, int hd, float* kt,
               float* v) {
  std::fill_n(kt, static_cast<size_t>(hd) * kTileKeys, 0.0f);
  thread_local std::vector<float> row;
  row.resize(hd);
  for (int j = 0; j < n; ++j) {
    decode_kv_row(type, key_rows[j], row.data(), hd);
    for (int d = 0; d < hd; ++d) kt[d * kTileKeys + j] = row[d];
    decode_kv_row(type, value_rows[j], v + static_cast<size_t>(j) * hd, hd);
  }
}

// Two chains, over even and odd d (so that SIMD kernels can keep enough fmas in flight),
// added at the end.
void scores(const float* q, int rows, int hd, const float* kt, float* s) {
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < kTileKeys; ++j) {
      float even = 0.0f, odd = 0.0f;
      for (int d = 0; d < hd; ++d) {
        float& chain = d % 2 == 0 ? even : odd;  // an odd head size's last d is even
        chain = std::fma(q[r * hd + d], kt[d * kTileKeys + j], chain);
      }
      s[r * kTileKeys + j] = even + odd;
    }
}

void accumulate(float* s_all, int rows, int n, const float* v, int hd, float* m_all, float* l_all, float* acc_all) {
  for (int r = 0; r < rows; ++r) {
    float* s = s_all + r * kTileKeys;
    float *acc = acc_all + static_cast<size_t>(r) * hd, &m = m_all[r], &l = l_all[r];
    const float c = raise_max(s, n, m);
    if (c != 1.0f) {
      l *= c;
      for (int d = 0; d < hd; ++d) acc[d] *= c;
    }
    for (int j = 0; j < n; ++j) s[j] = exp_approx(s[j] - m);
    l += tile_sum(s, n);
  }
  add_values_scalar(s_all, rows, n, v, hd, acc_all, 0);
}

const AttentionKernel kScalar{"scalar", load_tile, scores, accumulate};

}  // namespace

const AttentionKernel* scalar_attention_kernel() { return &kScalar; }

}  // namespace pagedchat::cpu
