#pragma once
// exp_approx (engine/common/exp_approx.h) on 8 or 16 SIMD lanes, for the files whose target
// has the instructions: the whole build under -march=native, or a kernel file that sets its own
// target with #pragma GCC target and defines PC_SIMD_EXP_AVX2 / PC_SIMD_EXP_AVX512 before
// including this (the pragma does not define __AVX2__ and the like).

#include "engine/common/exp_approx.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

// Internal linkage: each including file compiles these for its own target.
namespace pagedchat::cpu {
namespace {

// Step by step as exp_approx, on 16 or 8 lanes. A NaN input passes
// through min (which returns its second operand for NaN) and poisons the product.
#if defined(__AVX512F__) || defined(PC_SIMD_EXP_AVX512)
inline __m512 exp16(__m512 x) {
  const __m512 xc = _mm512_min_ps(_mm512_set1_ps(kExpMax), x);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(kLog2e)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-kLn2Hi), xc);
  r = _mm512_fmadd_ps(n, _mm512_set1_ps(-kLn2Lo), r);
  __m512 p = _mm512_set1_ps(kExpC5);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpC4));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpC3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpC2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpC1));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpC0));
  const __m512 e = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
  const __m512i bits = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  const __m512 y = _mm512_mul_ps(e, _mm512_castsi512_ps(bits));
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(kExpMin), _CMP_LT_OQ), y, _mm512_setzero_ps());
}
#endif
#if (defined(__AVX2__) && defined(__FMA__)) || defined(PC_SIMD_EXP_AVX2)
inline __m256 exp8(__m256 x) {
  const __m256 xc = _mm256_min_ps(_mm256_set1_ps(kExpMax), x);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kLn2Hi), xc);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kExpC5);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpC4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpC3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpC2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpC1));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpC0));
  const __m256 e = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
  const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  const __m256 y = _mm256_mul_ps(e, _mm256_castsi256_ps(bits));
  return _mm256_blendv_ps(y, _mm256_setzero_ps(), _mm256_cmp_ps(x, _mm256_set1_ps(kExpMin), _CMP_LT_OQ));
}
#endif

}  // namespace
}  // namespace pagedchat::cpu
#endif
