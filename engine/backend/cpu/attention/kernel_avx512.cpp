// The AVX-512 attention kernel: a tile's 16 keys in one register for the scores, 16 elements
// of d per register for the values; the scalar kernel's bits. Loads are the AVX2 loader's.
#include <cmath>

#include "engine/backend/cpu/attention/attention_kernel.h"
#include "engine/common/exp_approx.h"
#include "engine/common/float16.h"

#if defined(__x86_64__) && defined(__GNUC__)
// Code generation for the kernel's instruction set from here on only: inline functions of the
// headers above must stay as the rest of the build compiles them (the linker keeps one copy),
// so nothing below instantiates a standard-library template.
#pragma GCC target("avx512f,avx2,fma,f16c")
#if !defined(__clang__)
// GCC 12's AVX-512 header makes its "undefined" vectors from themselves (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "engine/backend/cpu/attention/kernel_avx2_load.h"
#define PC_SIMD_EXP_AVX512 1
#include "engine/backend/cpu/simd_exp.h"

namespace pagedchat::cpu {
namespace {

static_assert(kTileKeys == 16, "one tile of keys is one AVX-512 register");

// R rows at a time, each as two chains (even and odd d) of 16 keys: 2R independent fma chains.
template <int R>
void score_rows(const float* q, int hd, const float* kt, float* s) {
  __m512 a[R][2];
#pragma GCC unroll 16
  for (auto& row : a) row[0] = row[1] = _mm512_setzero_ps();
  int d = 0;
  for (; d + 2 <= hd; d += 2) {
    const __m512 e = _mm512_loadu_ps(kt + d * kTileKeys), o = _mm512_loadu_ps(kt + (d + 1) * kTileKeys);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      a[i][0] = _mm512_fmadd_ps(_mm512_set1_ps(q[i * hd + d]), e, a[i][0]);
      a[i][1] = _mm512_fmadd_ps(_mm512_set1_ps(q[i * hd + d + 1]), o, a[i][1]);
    }
  }
  if (d < hd) {  // an odd head size: the last d joins the even chain
    const __m512 e = _mm512_loadu_ps(kt + d * kTileKeys);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) a[i][0] = _mm512_fmadd_ps(_mm512_set1_ps(q[i * hd + d]), e, a[i][0]);
  }
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) _mm512_storeu_ps(s + i * kTileKeys, _mm512_add_ps(a[i][0], a[i][1]));
}

void scores(const float* q, int rows, int hd, const float* kt, float* s) {
  int r = 0;
  for (; r + 4 <= rows; r += 4) score_rows<4>(q + r * hd, hd, kt, s + r * kTileKeys);
  switch (rows - r) {
    case 3: score_rows<3>(q + r * hd, hd, kt, s + r * kTileKeys); break;
    case 2: score_rows<2>(q + r * hd, hd, kt, s + r * kTileKeys); break;
    case 1: score_rows<1>(q + r * hd, hd, kt, s + r * kTileKeys); break;
    default: break;
  }
}

// Per row: the max, the rescale, p = exp(s - m) (lanes >= n zero) and l += tile_sum(p).
void prepare_row(float* s, int n, int hd, float& m, float& l, float* acc) {
  const __mmask16 valid = static_cast<__mmask16>((1u << n) - 1);  // n <= 16
  const __m512 sv = _mm512_loadu_ps(s);
  const float c = raise_max_to(_mm512_mask_reduce_max_ps(valid, sv), m);
  if (c != 1.0f) {
    l *= c;
    const __m512 vc = _mm512_set1_ps(c);
    int d = 0;
    for (; d + 16 <= hd; d += 16) _mm512_storeu_ps(acc + d, _mm512_mul_ps(_mm512_loadu_ps(acc + d), vc));
    for (; d < hd; ++d) acc[d] *= c;
  }
  const __m512 p = _mm512_maskz_mov_ps(valid, exp16(_mm512_sub_ps(sv, _mm512_set1_ps(m))));
  _mm512_storeu_ps(s, p);
  // tile_sum's tree: + 8, + 4, + 2, + 1.
  const __m256 t8 = _mm256_add_ps(_mm512_castps512_ps256(p), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(p), 1)));
  const __m128 t4 = _mm_add_ps(_mm256_castps256_ps128(t8), _mm256_extractf128_ps(t8, 1));
  const __m128 t2 = _mm_add_ps(t4, _mm_movehl_ps(t4, t4));
  l += _mm_cvtss_f32(_mm_add_ss(t2, _mm_movehdup_ps(t2)));
}

// acc[r][d0, d0 + 16W) += sum over keys of p[r][j] * v[j], for R rows sharing each load of v.
template <int R, int W>
void add_values(const float* s, int n, const float* v, int hd, float* acc, int d0) {
  __m512 a[R][W];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int i = 0; i < W; ++i) a[r][i] = _mm512_loadu_ps(acc + static_cast<size_t>(r) * hd + d0 + 16 * i);
  for (int j = 0; j < n; ++j) {
    const float* vj = v + static_cast<size_t>(j) * hd + d0;
    __m512 x[W];
#pragma GCC unroll 16
    for (int i = 0; i < W; ++i) x[i] = _mm512_loadu_ps(vj + 16 * i);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 p = _mm512_set1_ps(s[r * kTileKeys + j]);
#pragma GCC unroll 16
      for (int i = 0; i < W; ++i) a[r][i] = _mm512_fmadd_ps(p, x[i], a[r][i]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int i = 0; i < W; ++i) _mm512_storeu_ps(acc + static_cast<size_t>(r) * hd + d0 + 16 * i, a[r][i]);
}

template <int R>
void add_values_rows(const float* s, int n, const float* v, int hd, float* acc) {
  int d0 = 0;
  for (; d0 + 64 <= hd; d0 += 64) add_values<R, 4>(s, n, v, hd, acc, d0);
  for (; d0 + 16 <= hd; d0 += 16) add_values<R, 1>(s, n, v, hd, acc, d0);
  add_values_scalar(s, R, n, v, hd, acc, d0);
}

void accumulate(float* s, int rows, int n, const float* v, int hd, float* m, float* l, float* acc) {
  for (int r = 0; r < rows; ++r) prepare_row(s + r * kTileKeys, n, hd, m[r], l[r], acc + static_cast<size_t>(r) * hd);
  // Three rows at a time (12 accumulators of 16 d): each value load feeds three rows' fmas.
  int r = 0;
  for (; r + 3 <= rows; r += 3) add_values_rows<3>(s + r * kTileKeys, n, v, hd, acc + static_cast<size_t>(r) * hd);
  if (rows - r == 2) add_values_rows<2>(s + r * kTileKeys, n, v, hd, acc + static_cast<size_t>(r) * hd);
  if (rows - r == 1) add_values_rows<1>(s + r * kTileKeys, n, v, hd, acc + static_cast<size_t>(r) * hd);
}

const AttentionKernel kAvx512{"avx512", avx2_load_tile, scores, accumulate};

}  // namespace

const AttentionKernel* avx512_attention_kernel() {
  static const bool supported = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") &&
                                __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  return supported ? &kAvx512 : nullptr;
}

}  // namespace pagedchat::cpu

#else
namespace pagedchat::cpu {
const AttentionKernel* avx512_attention_kernel() { return nullptr; }
}  // namespace pagedchat::cpu
#endif
