// AVX2 conversion of float activations into Q8_0 / Q8_1 / Q8_K blocks, byte-identical to the
// reference: the block maximum is exact whatever the order, the scale is computed by the same
// scalar code, and rounding is to nearest even in both.

#include <cstring>

#include "engine/quant/quant.h"
#include "engine/quant/quant_avx2.h"
#include "engine/quant/quant_blocks.h"
#include "engine/quant/simd_avx2.h"

#if defined(PAGEDCHAT_QUANT_AVX2)
namespace pagedchat::quant_avx2 {
namespace {

// max |x[j]| over 8 * count floats.
static inline float abs_max(const float* x, int count) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 m = _mm256_setzero_ps();
  for (int k = 0; k < count; ++k) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * k)));
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

static inline int hsum4(__m128i v) {
  v = _mm_add_epi32(v, _mm_unpackhi_epi64(v, v));
  return _mm_cvtsi128_si32(_mm_add_epi32(v, _mm_shuffle_epi32(v, 1)));
}

// 8 floats -> 8 int32 quants: round to nearest even, clamp to [-127, 127] (quantize_q8_value).
static inline __m256i quantize8(const float* x, __m256 inverse) {
  __m256 r = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x), inverse),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  r = _mm256_max_ps(_mm256_min_ps(r, _mm256_set1_ps(127.0f)), _mm256_set1_ps(-127.0f));
  return _mm256_cvtps_epi32(r);
}

// 32 floats -> 32 int8 at dst; returns the four int32 vectors' sum lane-wise.
static inline __m256i quantize32(const float* x, __m256 inverse, int8_t* dst) {
  const __m256i q0 = quantize8(x, inverse), q1 = quantize8(x + 8, inverse);
  const __m256i q2 = quantize8(x + 16, inverse), q3 = quantize8(x + 24, inverse);
  // packs work within 128-bit lanes; the permute puts the 8 groups of 4 back in order.
  const __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(q0, q1), _mm256_packs_epi32(q2, q3));
  const __m256i ordered = _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), ordered);
  return _mm256_add_epi32(_mm256_add_epi32(q0, q1), _mm256_add_epi32(q2, q3));
}

void quantize_q8_0(const float* x, block_q8_0* y, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    y[i].d = fp32_to_fp16(abs_max(x, 4) / 127.0f);
    quantize32(x, _mm256_set1_ps(inverse_or_zero(fp16_to_fp32(y[i].d))), y[i].qs);
  }
}

void quantize_q8_1(const float* x, block_q8_1* y, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    y[i].d = fp32_to_fp16(abs_max(x, 4) / 127.0f);
    const float d = fp16_to_fp32(y[i].d);
    const int sum = hsum(quantize32(x, _mm256_set1_ps(inverse_or_zero(d)), y[i].qs));
    y[i].s = fp32_to_fp16(d * static_cast<float>(sum));
  }
}

void quantize_q8_K(const float* x, block_q8_K* y, int64_t n) {
  for (int64_t i = 0; i < n / kQKK; ++i, x += kQKK) {
    y[i].d = abs_max(x, kQKK / 8) / 127.0f;
    const __m256 inverse = _mm256_set1_ps(inverse_or_zero(y[i].d));
    for (int k = 0; k < kQKK / 32; ++k) {
      quantize32(x + 32 * k, inverse, y[i].qs + 32 * k);
      // bsums: the two 16-element groups of these 32 quants.
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].qs + 32 * k));
      const __m256i pairs = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), q),
                                              _mm256_set1_epi16(1));
      y[i].bsums[2 * k] = static_cast<int16_t>(hsum4(_mm256_castsi256_si128(pairs)));
      y[i].bsums[2 * k + 1] = static_cast<int16_t>(hsum4(_mm256_extracti128_si256(pairs, 1)));
    }
  }
}

}  // namespace

void quantize_activation_row(GgmlType weight_type, const float* x, void* dst, int64_t n) {
  switch (dot_activation_type(weight_type)) {
    case GgmlType::Q8_0: return quantize_q8_0(x, static_cast<block_q8_0*>(dst), n);
    case GgmlType::Q8_1: return quantize_q8_1(x, static_cast<block_q8_1*>(dst), n);
    case GgmlType::Q8_K: return quantize_q8_K(x, static_cast<block_q8_K*>(dst), n);
    default: std::memcpy(dst, x, static_cast<size_t>(n) * sizeof(float)); return;  // F32
  }
}

}  // namespace pagedchat::quant_avx2
#endif
