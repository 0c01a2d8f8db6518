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

void scores(const float* q, int rows, int hd, const float* kt, float* s) {
  int r = 0;
  for (; r + 8 <= rows; r += 8) {
    __m512 a[8];
    for (__m512& x : a) x = _mm512_setzero_ps();
    for (int d = 0; d < hd; ++d) {
      const __m512 k = _mm512_loadu_ps(kt + d * kTileKeys);
      for (int i = 0; i < 8; ++i) a[i] = _mm512_fmadd_ps(_mm512_set1_ps(q[(r + i) * hd + d]), k, a[i]);
    }
    for (int i = 0; i < 8; ++i) _mm512_storeu_ps(s + (r + i) * kTileKeys, a[i]);
  }
  for (; r < rows; ++r) {
    __m512 a = _mm512_setzero_ps();
    for (int d = 0; d < hd; ++d) a = _mm512_fmadd_ps(_mm512_set1_ps(q[r * hd + d]), _mm512_loadu_ps(kt + d * kTileKeys), a);
    _mm512_storeu_ps(s + r * kTileKeys, a);
  }
}

void accumulate(float* s, int n, const float* v, int hd, float& m, float& l, float* acc) {
  const float c = raise_max(s, n, m);
  if (c != 1.0f) {
    l *= c;
    const __m512 vc = _mm512_set1_ps(c);
    int d = 0;
    for (; d + 16 <= hd; d += 16) _mm512_storeu_ps(acc + d, _mm512_mul_ps(_mm512_loadu_ps(acc + d), vc));
    for (; d < hd; ++d) acc[d] *= c;
  }
  _mm512_storeu_ps(s, exp16(_mm512_sub_ps(_mm512_loadu_ps(s), _mm512_set1_ps(m))));
  for (int j = 0; j < n; ++j) l += s[j];
  int d0 = 0;
  for (; d0 + 64 <= hd; d0 += 64) {
    __m512 a[4];
    for (int i = 0; i < 4; ++i) a[i] = _mm512_loadu_ps(acc + d0 + 16 * i);
    for (int j = 0; j < n; ++j) {
      const __m512 p = _mm512_set1_ps(s[j]);
      const float* vj = v + static_cast<size_t>(j) * hd + d0;
      for (int i = 0; i < 4; ++i) a[i] = _mm512_fmadd_ps(p, _mm512_loadu_ps(vj + 16 * i), a[i]);
    }
    for (int i = 0; i < 4; ++i) _mm512_storeu_ps(acc + d0 + 16 * i, a[i]);
  }
  for (; d0 + 16 <= hd; d0 += 16) {
    __m512 a = _mm512_loadu_ps(acc + d0);
    for (int j = 0; j < n; ++j)
      a = _mm512_fmadd_ps(_mm512_set1_ps(s[j]), _mm512_loadu_ps(v + static_cast<size_t>(j) * hd + d0), a);
    _mm512_storeu_ps(acc + d0, a);
  }
  for (; d0 < hd; ++d0)
    for (int j = 0; j < n; ++j) acc[d0] = std::fma(s[j], v[static_cast<size_t>(j) * hd + d0], acc[d0]);
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
