// f32 vector kernels (RMSNorm, SwiGLU, GeGLU, exp, add) with a fixed order of operations.
#include "engine/backend/cpu/vector_ops.h"

#include <algorithm>
#include <cmath>

#include "engine/backend/cpu/simd_exp.h"
#include "engine/common/exp_approx.h"

#if defined(PC_VEC_AVX512) && defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 header makes its "undefined" vectors from themselves, which
// -Wmaybe-uninitialized reports at every inlined conversion (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace pagedchat::cpu {

void rms_norm(const float* x, const float* weight, float* out, int64_t n, float eps) {
  float ss = dot_f32(x, x, n);
  float scale = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * scale * weight[i];
}

void swiglu_oai(float* gate, const float* up, int64_t n, float alpha, float limit) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = std::min(gate[i], limit), u = std::clamp(up[i], -limit, limit);
    gate[i] = g / (1.0f + std::exp(-alpha * g)) * (u + 1.0f);
  }
}

void swiglu(float* gate, const float* up, int64_t n) {
  int64_t i = 0;
#if defined(PC_VEC_AVX512)
  for (; i + 16 <= n; i += 16) {
    const __m512 g = _mm512_loadu_ps(gate + i);
    const __m512 e = exp16(_mm512_sub_ps(_mm512_setzero_ps(), g));
    _mm512_storeu_ps(gate + i, _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.0f), e)),
                                             _mm512_loadu_ps(up + i)));
  }
#elif defined(PC_VEC_AVX2)
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), g));
    _mm256_storeu_ps(gate + i, _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e)),
                                             _mm256_loadu_ps(up + i)));
  }
#endif
  for (; i < n; ++i) gate[i] = silu_mul_approx(gate[i], up[i]);
}

// gelu_tanh(x) = x / 2 (1 + tanh(u)) = x / (1 + exp(-2u)), u = sqrt(2 / pi) (x + 0.044715 x^3):
// SwiGLU's form with -2u in the exp, so it shares its exp and its vector shape.
void geglu(float* gate, const float* up, int64_t n) {
  constexpr float kMinusTwoSqrt2OverPi = -1.5957691216057308f, kCubic = 0.044715f;
  int64_t i = 0;
#if defined(PC_VEC_AVX512)
  for (; i + 16 <= n; i += 16) {
    const __m512 g = _mm512_loadu_ps(gate + i);
    const __m512 inner = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(kCubic), g), _mm512_mul_ps(g, g), g);
    const __m512 e = exp16(_mm512_mul_ps(_mm512_set1_ps(kMinusTwoSqrt2OverPi), inner));
    _mm512_storeu_ps(gate + i, _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.0f), e)),
                                             _mm512_loadu_ps(up + i)));
  }
#elif defined(PC_VEC_AVX2)
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 inner = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(kCubic), g), _mm256_mul_ps(g, g), g);
    const __m256 e = exp8(_mm256_mul_ps(_mm256_set1_ps(kMinusTwoSqrt2OverPi), inner));
    _mm256_storeu_ps(gate + i, _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e)),
                                             _mm256_loadu_ps(up + i)));
  }
#endif
  for (; i < n; ++i) {
    const float g = gate[i];
    const float inner = std::fma(kCubic * g, g * g, g);
    gate[i] = g / (1.0f + exp_approx(kMinusTwoSqrt2OverPi * inner)) * up[i];
  }
}

void exp_inplace(float* x, int64_t n) {
  int64_t i = 0;
#if defined(PC_VEC_AVX512)
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, exp16(_mm512_loadu_ps(x + i)));
#elif defined(PC_VEC_AVX2)
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, exp8(_mm256_loadu_ps(x + i)));
#endif
  for (; i < n; ++i) x[i] = exp_approx(x[i]);
}

void add_inplace(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

}  // namespace pagedchat::cpu
