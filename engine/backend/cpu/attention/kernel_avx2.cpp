// The AVX2+FMA+F16C attention kernel: 8 keys or 8 elements of d per lane group, the scalar
// kernel's bits. Compiled for AVX2 whatever the build's target, used where the CPU has it.
#include <cmath>

#include "engine/backend/cpu/attention/attention_kernel.h"
#include "engine/common/exp_approx.h"
#include "engine/common/float16.h"

#if defined(__x86_64__) && defined(__GNUC__)
// Code generation for the kernel's instruction set from here on only: inline functions of the
// headers above must stay as the rest of the build compiles them (the linker keeps one copy),
// so nothing below instantiates a standard-library template.
#pragma GCC target("avx2,fma,f16c")
#include <immintrin.h>

#include "engine/backend/cpu/attention/kernel_avx2_load.h"
#define PC_SIMD_EXP_AVX2 1
#include "engine/backend/cpu/simd_exp.h"

namespace pagedchat::cpu {
namespace {

// R rows at a time, each as two chains (even and odd d) over two 8-key halves: 4R independent
// fma chains, enough to hide the fma latency from R = 2 on.
template <int R>
void score_rows(const float* q, int hd, const float* kt, float* s) {
  __m256 a[R][2][2];  // [row][even, odd d][keys 0-7, 8-15]
#pragma GCC unroll 16
  for (auto& row : a)
#pragma GCC unroll 16
    for (auto& half : row) half[0] = half[1] = _mm256_setzero_ps();
  int d = 0;
  for (; d + 2 <= hd; d += 2) {
    const float* k = kt + d * kTileKeys;
    const __m256 e0 = _mm256_loadu_ps(k), e1 = _mm256_loadu_ps(k + 8);
    const __m256 o0 = _mm256_loadu_ps(k + kTileKeys), o1 = _mm256_loadu_ps(k + kTileKeys + 8);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const __m256 be = _mm256_broadcast_ss(q + i * hd + d), bo = _mm256_broadcast_ss(q + i * hd + d + 1);
      a[i][0][0] = _mm256_fmadd_ps(be, e0, a[i][0][0]);
      a[i][0][1] = _mm256_fmadd_ps(be, e1, a[i][0][1]);
      a[i][1][0] = _mm256_fmadd_ps(bo, o0, a[i][1][0]);
      a[i][1][1] = _mm256_fmadd_ps(bo, o1, a[i][1][1]);
    }
  }
  if (d < hd) {  // an odd head size: the last d joins the even chain
    const __m256 e0 = _mm256_loadu_ps(kt + d * kTileKeys), e1 = _mm256_loadu_ps(kt + d * kTileKeys + 8);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const __m256 be = _mm256_broadcast_ss(q + i * hd + d);
      a[i][0][0] = _mm256_fmadd_ps(be, e0, a[i][0][0]);
      a[i][0][1] = _mm256_fmadd_ps(be, e1, a[i][0][1]);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
    _mm256_storeu_ps(s + i * kTileKeys, _mm256_add_ps(a[i][0][0], a[i][1][0]));
    _mm256_storeu_ps(s + i * kTileKeys + 8, _mm256_add_ps(a[i][0][1], a[i][1][1]));
  }
}

void scores(const float* q, int rows, int hd, const float* kt, float* s) {
  int r = 0;
  for (; r + 3 <= rows; r += 3) score_rows<3>(q + r * hd, hd, kt, s + r * kTileKeys);
  if (rows - r == 2) score_rows<2>(q + r * hd, hd, kt, s + r * kTileKeys);
  if (rows - r == 1) score_rows<1>(q + r * hd, hd, kt, s + r * kTileKeys);
}

// Per row: the max, the rescale, p = exp(s - m) (lanes >= n zero) and l += tile_sum(p).
void prepare_row(float* s, int n, int hd, float& m, float& l, float* acc) {
  const __m256 lane = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 in0 = _mm256_cmp_ps(lane, _mm256_set1_ps(static_cast<float>(n)), _CMP_LT_OQ);
  const __m256 in1 = _mm256_cmp_ps(lane, _mm256_set1_ps(static_cast<float>(n - 8)), _CMP_LT_OQ);
  const __m256 s0 = _mm256_loadu_ps(s), s1 = _mm256_loadu_ps(s + 8), low = _mm256_set1_ps(-INFINITY);
  // The max of the valid lanes (lane 0 always is), folded in halves.
  const __m256 m8 = _mm256_max_ps(_mm256_blendv_ps(low, s0, in0), _mm256_blendv_ps(low, s1, in1));
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m8), _mm256_extractf128_ps(m8, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  const float c = raise_max_to(_mm_cvtss_f32(_mm_max_ss(m4, _mm_movehdup_ps(m4))), m);
  if (c != 1.0f) {
    l *= c;
    const __m256 vc = _mm256_set1_ps(c);
    int d = 0;
    for (; d + 8 <= hd; d += 8) _mm256_storeu_ps(acc + d, _mm256_mul_ps(_mm256_loadu_ps(acc + d), vc));
    for (; d < hd; ++d) acc[d] *= c;
  }
  const __m256 vm = _mm256_set1_ps(m);
  const __m256 p0 = _mm256_and_ps(exp8(_mm256_sub_ps(s0, vm)), in0);
  const __m256 p1 = _mm256_and_ps(exp8(_mm256_sub_ps(s1, vm)), in1);
  _mm256_storeu_ps(s, p0);
  _mm256_storeu_ps(s + 8, p1);
  // tile_sum's tree: + 8, + 4, + 2, + 1.
  const __m256 t8 = _mm256_add_ps(p0, p1);
  const __m128 t4 = _mm_add_ps(_mm256_castps256_ps128(t8), _mm256_extractf128_ps(t8, 1));
  const __m128 t2 = _mm_add_ps(t4, _mm_movehl_ps(t4, t4));
  l += _mm_cvtss_f32(_mm_add_ss(t2, _mm_movehdup_ps(t2)));
}

// acc[r][d0, d0 + 8W) += sum over keys of p[r][j] * v[j], for R rows sharing each load of v.
template <int R, int W>
void add_values(const float* s, int n, const float* v, int hd, float* acc, int d0) {
  __m256 a[R][W];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int i = 0; i < W; ++i) a[r][i] = _mm256_loadu_ps(acc + static_cast<size_t>(r) * hd + d0 + 8 * i);
  for (int j = 0; j < n; ++j) {
    const float* vj = v + static_cast<size_t>(j) * hd + d0;
    __m256 x[W];
#pragma GCC unroll 16
    for (int i = 0; i < W; ++i) x[i] = _mm256_loadu_ps(vj + 8 * i);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m256 p = _mm256_broadcast_ss(s + r * kTileKeys + j);
#pragma GCC unroll 16
      for (int i = 0; i < W; ++i) a[r][i] = _mm256_fmadd_ps(p, x[i], a[r][i]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int i = 0; i < W; ++i) _mm256_storeu_ps(acc + static_cast<size_t>(r) * hd + d0 + 8 * i, a[r][i]);
}

// W = 4 (32 d) for one or two rows, 2 (16 d) for three: at most 12 accumulators, so that the
// values and a probability still fit the 16 registers.
template <int R>
void add_values_rows(const float* s, int n, const float* v, int hd, float* acc) {
  constexpr int W = R == 3 ? 2 : 4;
  int d0 = 0;
  for (; d0 + 8 * W <= hd; d0 += 8 * W) add_values<R, W>(s, n, v, hd, acc, d0);
  for (; d0 + 8 <= hd; d0 += 8) add_values<R, 1>(s, n, v, hd, acc, d0);
  add_values_scalar(s, R, n, v, hd, acc, d0);
}

void accumulate(float* s, int rows, int n, const float* v, int hd, float* m, float* l, float* acc) {
  for (int r = 0; r < rows; ++r) prepare_row(s + r * kTileKeys, n, hd, m[r], l[r], acc + static_cast<size_t>(r) * hd);
  // Three or two rows at a time: each value load feeds every row's fmas.
  int r = 0;
  for (; r + 3 <= rows; r += 3) add_values_rows<3>(s + r * kTileKeys, n, v, hd, acc + static_cast<size_t>(r) * hd);
  if (rows - r == 2) add_values_rows<2>(s + r * kTileKeys, n, v, hd, acc + static_cast<size_t>(r) * hd);
  if (rows - r == 1) add_values_rows<1>(s + r * kTileKeys, n, v, hd, acc + static_cast<size_t>(r) * hd);
}

const AttentionKernel kAvx2{"avx2", avx2_load_tile, scores, accumulate};

}  // namespace

const AttentionKernel* avx2_attention_kernel() {
  static const bool supported =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  return supported ? &kAvx2 : nullptr;
}

}  // namespace pagedchat::cpu

#else
namespace pagedchat::cpu {
const AttentionKernel* avx2_attention_kernel() { return nullptr; }
}  // namespace pagedchat::cpu
#endif
