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

// Four rows at a time: eight independent fma chains hide the fma latency.
void scores(const float* q, int rows, int hd, const float* kt, float* s) {
  int r = 0;
  for (; r + 4 <= rows; r += 4) {
    __m256 a[4][2];
    for (auto& row : a) row[0] = row[1] = _mm256_setzero_ps();
    for (int d = 0; d < hd; ++d) {
      const __m256 k0 = _mm256_loadu_ps(kt + d * kTileKeys), k1 = _mm256_loadu_ps(kt + d * kTileKeys + 8);
      for (int i = 0; i < 4; ++i) {
        const __m256 b = _mm256_broadcast_ss(q + (r + i) * hd + d);
        a[i][0] = _mm256_fmadd_ps(b, k0, a[i][0]);
        a[i][1] = _mm256_fmadd_ps(b, k1, a[i][1]);
      }
    }
    for (int i = 0; i < 4; ++i) {
      _mm256_storeu_ps(s + (r + i) * kTileKeys, a[i][0]);
      _mm256_storeu_ps(s + (r + i) * kTileKeys + 8, a[i][1]);
    }
  }
  for (; r < rows; ++r) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    for (int d = 0; d < hd; ++d) {
      const __m256 b = _mm256_broadcast_ss(q + r * hd + d);
      a0 = _mm256_fmadd_ps(b, _mm256_loadu_ps(kt + d * kTileKeys), a0);
      a1 = _mm256_fmadd_ps(b, _mm256_loadu_ps(kt + d * kTileKeys + 8), a1);
    }
    _mm256_storeu_ps(s + r * kTileKeys, a0);
    _mm256_storeu_ps(s + r * kTileKeys + 8, a1);
  }
}

void accumulate(float* s, int n, const float* v, int hd, float& m, float& l, float* acc) {
  const float c = raise_max(s, n, m);
  if (c != 1.0f) {
    l *= c;
    const __m256 vc = _mm256_set1_ps(c);
    int d = 0;
    for (; d + 8 <= hd; d += 8) _mm256_storeu_ps(acc + d, _mm256_mul_ps(_mm256_loadu_ps(acc + d), vc));
    for (; d < hd; ++d) acc[d] *= c;
  }
  const __m256 vm = _mm256_set1_ps(m);
  _mm256_storeu_ps(s, exp8(_mm256_sub_ps(_mm256_loadu_ps(s), vm)));
  _mm256_storeu_ps(s + 8, exp8(_mm256_sub_ps(_mm256_loadu_ps(s + 8), vm)));
  for (int j = 0; j < n; ++j) l += s[j];
  // 64 elements of acc stay in registers across the tile's keys.
  int d0 = 0;
  for (; d0 + 64 <= hd; d0 += 64) {
    __m256 a[8];
    for (int i = 0; i < 8; ++i) a[i] = _mm256_loadu_ps(acc + d0 + 8 * i);
    for (int j = 0; j < n; ++j) {
      const __m256 p = _mm256_broadcast_ss(s + j);
      const float* vj = v + static_cast<size_t>(j) * hd + d0;
      for (int i = 0; i < 8; ++i) a[i] = _mm256_fmadd_ps(p, _mm256_loadu_ps(vj + 8 * i), a[i]);
    }
    for (int i = 0; i < 8; ++i) _mm256_storeu_ps(acc + d0 + 8 * i, a[i]);
  }
  for (; d0 + 8 <= hd; d0 += 8) {
    __m256 a = _mm256_loadu_ps(acc + d0);
    for (int j = 0; j < n; ++j)
      a = _mm256_fmadd_ps(_mm256_broadcast_ss(s + j), _mm256_loadu_ps(v + static_cast<size_t>(j) * hd + d0), a);
    _mm256_storeu_ps(acc + d0, a);
  }
  for (; d0 < hd; ++d0)
    for (int j = 0; j < n; ++j) acc[d0] = std::fma(s[j], v[static_cast<size_t>(j) * hd + d0], acc[d0]);
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
