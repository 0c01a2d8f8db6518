#pragma once
// The inner steps of CPU paged attention, one set per instruction set (scalar, AVX2,
// AVX-512), chosen at run time. The planner (paged_attention.cpp) walks each query row over its
// keys in tiles of kTileKeys; a kernel converts a tile of K/V rows to f32 once, scores query
// rows against it and folds the tile into each row's online-softmax state.
//
// Every kernel computes the same bits as the scalar one: each score is one fma chain over d in
// ascending order, each output element one fma chain over the tile's keys in order, exp is
// exp_approx, and sums of probabilities run in key order. SIMD lanes only hold different keys
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
  // s[r][j] = sum over d of q[r][d] * kt[d][j] for r < rows, j < kTileKeys.
  void (*scores)(const float* q, int rows, int head_dim, const float* kt, float* s);
  // Folds the tile's first n keys (scores s[0, n), values v) into one row's state: running
  // max m, sum l of exp(score - m), acc[head_dim] = sum of exp(score - m) * value. s is
  // clobbered. A fresh state is m = -inf, l = 0, acc = 0.
  void (*accumulate)(float* s, int n, const float* v, int head_dim, float& m, float& l, float* acc);
};

// accumulate's scalar first step, the same in every kernel: the tile's max (of s[0, n)) folded
// into m; returns the factor the state's l and acc must be multiplied by (1: leave them).
inline float raise_max(const float* s, int n, float& m) {
  float tile_max = s[0];
  for (int j = 1; j < n; ++j) tile_max = s[j] > tile_max ? s[j] : tile_max;
  if (!(tile_max > m)) return 1.0f;
  const float c = m == -INFINITY ? 1.0f : exp_approx(m - tile_max);  // a fresh state has nothing to scale
  m = tile_max;
  return c;
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
