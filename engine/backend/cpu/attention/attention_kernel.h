#pragma once
// The inner steps of CPU paged attention, one set per instruction set (scalar, AVX2,
// AVX-512), chosen at run time. The planner (paged_attention.cpp) walks each query row over its
// keys in tiles of kTileKeys; a kernel converts a tile of K/V rows to f32 once, scores query
// rows against it and folds the tile into each row's online-softmax state.
//
// Every kernel computes the same bits as the scalar one: each score is two fma chains over d in
// ascending order (even d, odd d) added at the end, each output element one fma chain over the tile's keys in order, exp is
// exp_approx, and a tile's probabilities are summed in one fixed tree (tile_sum). SIMD lanes only hold different keys
// (scores) or different d (values), never parts of one sum. So logits depend neither on the
// kernel nor on how the planner tiles, splits or threads the work.

#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/backend/kv_type.h"
#include "engine/common/exp_approx.h"

namespace pagedchat::cpu {

inline constexpr int kTileKeys = 16;
// The largest head size the kernels take (Gemma 3 uses 256); the backend refuses larger ones.
inline constexpr int kMaxHeadDim = 256;

struct AttentionKernel {
  std::string_view name;  // "scalar", "avx2", "avx512"
  // kt [head_dim][kTileKeys]: key j of the tile in column j (columns >= n are zero);
  // v [kTileKeys][head_dim]: value j in row j (rows >= n unset). Rows are in `type`.
  void (*load_tile)(KvType type, const uint8_t* const* key_rows, const uint8_t* const* value_rows, int n,
                    int head_dim, float* kt, float* v);
  // s[r][j] = sum over d of q[r][d] * kt[d][j] for r < rows, j < kTileKeys (even d, then odd d,
  // each summed in order, then added; an odd head size's last d goes with the even ones).
  void (*scores)(const float* q, int rows, int head_dim, const float* kt, float* s);
  // Folds the tile's first n keys (scores s[r][0, n), values v) into the states of `rows` rows
  // (the query heads of one token, which see the same keys): running max m[r], sum l[r] of
  // exp(score - m), acc[r][head_dim] = sum of exp(score - m) * value. s is clobbered. A fresh
  // state is m = -inf, l = 0, acc = 0.
  void (*accumulate)(float* s, int rows, int n, const float* v, int head_dim, float* m, float* l, float* acc);
};

// accumulate's scalar first step, the same in every kernel: the tile's max (of s[0, n)) folded
// into m; returns the factor the state's l and acc must be multiplied by (1: leave them).
// Scores are finite, so the max does not depend on the order it is taken in.
// tile_max: the max of s[0, n), given (a SIMD kernel takes it in any order: max is exact).
inline float raise_max_to(float tile_max, float& m) {
  if (!(tile_max > m)) return 1.0f;
  const float c = m == -INFINITY ? 1.0f : exp_approx(m - tile_max);  // a fresh state has nothing to scale
  m = tile_max;
  return c;
}
inline float raise_max(const float* s, int n, float& m) {
  float tile_max = s[0];
  for (int j = 1; j < n; ++j) tile_max = s[j] > tile_max ? s[j] : tile_max;
  return raise_max_to(tile_max, m);
}

// The sum of a tile's probabilities p[0, n) that l grows by, as a fixed tree a SIMD register
// folds in halves (p[j] + p[j + 8], then + 4, + 2, + 1; p[j >= n] counted as 0), so that no
// kernel adds 16 numbers one after another.
inline float tile_sum(const float* p, int n) {
  float t[kTileKeys];
  for (int j = 0; j < kTileKeys; ++j) t[j] = j < n ? p[j] : 0.0f;
  for (int half = kTileKeys / 2; half >= 1; half /= 2)
    for (int j = 0; j < half; ++j) t[j] = t[j] + t[j + half];
  return t[0];
}

// acc[r][d] += sum over keys j < n of p[r][j] * v[j][d] for r < rows and d in [d_begin, hd), one
// fma per key in key order: the scalar kernel's whole loop, the SIMD kernels' tail of d.
inline void add_values_scalar(const float* p, int rows, int n, const float* v, int hd, float* acc, int d_begin) {
  for (int r = 0; r < rows; ++r)
    for (int d = d_begin; d < hd; ++d) {
      float a = acc[static_cast<size_t>(r) * hd + d];
      for (int j = 0; j < n; ++j) a = std::fma(p[r * kTileKeys + j], v[static_cast<size_t>(j) * hd + d], a);
      acc[static_cast<size_t>(r) * hd + d] = a;
    }
}

// The kernels this CPU runs, scalar first, fastest last.
const std::vector<const AttentionKernel*>& attention_kernels();
const AttentionKernel& default_attention_kernel();

// The kernels of each file; null where the file's instruction set is not compiled in or not
// supported by this CPU.
const AttentionKernel* scalar_attention_kernel();
const AttentionKernel* avx2_attention_kernel();
const AttentionKernel* avx512_attention_kernel();

}  // namespace pagedchat::cpu
