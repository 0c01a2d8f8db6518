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

void scores(const float* q, int rows, int hd, const float* kt, float* s) {
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < kTileKeys; ++j) {
      float acc = 0.0f;
      for (int d = 0; d < hd; ++d) acc = std::fma(q[r * hd + d], kt[d * kTileKeys + j], acc);
      s[r * kTileKeys + j] = acc;
    }
}

void accumulate(float* s, int n, const float* v, int hd, float& m, float& l, float* acc) {
  const float c = raise_max(s, n, m);
  if (c != 1.0f) {
    l *= c;
    for (int d = 0; d < hd; ++d) acc[d] *= c;
  }
  for (int j = 0; j < n; ++j) s[j] = exp_approx(s[j] - m);
  for (int j = 0; j < n; ++j) l += s[j];
  for (int j = 0; j < n; ++j)
    for (int d = 0; d < hd; ++d) acc[d] = std::fma(s[j], v[static_cast<size_t>(j) * hd + d], acc[d]);
}

const AttentionKernel kScalar{"scalar", load_tile, scores, accumulate};

}  // namespace

const AttentionKernel* scalar_attention_kernel() { return &kScalar; }

}  // namespace pagedchat::cpu
