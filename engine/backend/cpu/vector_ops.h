#pragma once
// Small f32 vector kernels of the CPU forward pass (AVX2+FMA where compiled in, scalar
// otherwise). Each gives the same bits for the same inputs whatever the batch around it.

#include <cstdint>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define PC_VEC_AVX2 1
#endif
#if defined(__AVX512F__)
#define PC_VEC_AVX512 1
#endif

namespace pagedchat::cpu {

// dot and axpy are inline: attention calls them per key row of 64-128 elements, where a call
// costs as much as the work.
inline float dot_f32(const float* a, const float* b, int64_t n) {
  int64_t i = 0;
  float sum = 0.0f;
#ifdef PC_VEC_AVX2
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(_mm256_add_ps(acc0, acc1)),
                        _mm256_extractf128_ps(_mm256_add_ps(acc0, acc1), 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  sum = _mm_cvtss_f32(s);
#endif
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// y += a * x
inline void axpy_f32(float a, const float* x, float* y, int64_t n) {
  int64_t i = 0;
#ifdef PC_VEC_AVX2
  const __m256 va = _mm256_set1_ps(a);
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
#endif
  for (; i < n; ++i) y[i] += a * x[i];
}
// out = x / rms(x) * weight (out may be x)
void rms_norm(const float* x, const float* weight, float* out, int64_t n, float eps);
// x[i] = silu(gate[i]) * up[i], written over gate (exp by exp_approx: the same bits as the
// scalar silu_mul_approx, and as the CUDA kernel)
void swiglu(float* gate, const float* up, int64_t n);
// x[i] = gelu_tanh(gate[i]) * up[i], written over gate (Gemma's gated feed-forward), by the same exp
void geglu(float* gate, const float* up, int64_t n);
// gpt-oss's clamped SwiGLU over gate, as ggml's swiglu_oai: g = min(gate, limit),
// u = clamp(up, -limit, limit), g * sigmoid(alpha g) * (u + 1)
void swiglu_oai(float* gate, const float* up, int64_t n, float alpha = 1.702f, float limit = 7.0f);
// x[i] = exp_approx(x[i]), vectorized
void exp_inplace(float* x, int64_t n);
void add_inplace(float* y, const float* x, int64_t n);

}  // namespace pagedchat::cpu
