// AVX2 dequantization of weight rows, bit-identical to the reference (quant_blocks.h): the same
// float operations in the same order, element by element, eight at a time.

#include <cstring>

#include "engine/quant/quant.h"
#include "engine/quant/quant_avx2.h"
#include "engine/quant/quant_blocks.h"
#include "engine/quant/simd_avx2.h"

#if defined(PAGEDCHAT_QUANT_AVX2)
namespace pagedchat::quant_avx2 {
namespace {

// 32 int8 quants -> 32 floats: y = d * q, or d * q + m when Offset (an fma gives the same bits:
// d * q is exact, see quant_blocks.h). d_first scales elements
// 0..15 and d_second 16..31 (Q6_K groups are 16 elements; other types pass one d twice).
template <bool Offset>
static inline void store_block32(__m256i q, __m256 d_first, __m256 d_second, __m256 m, float* y) {
  const __m128i halves[2] = {_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1)};
  for (int k = 0; k < 4; ++k) {
    const __m128i bytes = (k % 2 == 0) ? halves[k / 2] : _mm_srli_si128(halves[k / 2], 8);
    const __m256 qf = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes));
    const __m256 d = k < 2 ? d_first : d_second;
    _mm256_storeu_ps(y + 8 * k, Offset ? _mm256_fmadd_ps(d, qf, m) : _mm256_mul_ps(d, qf));
  }
}

static inline void store_scaled(__m256i q, float d, float* y) {
  const __m256 dv = _mm256_set1_ps(d);
  store_block32<false>(q, dv, dv, dv, y);
}

static inline void store_scaled_offset(__m256i q, float d, float m, float* y) {
  const __m256 dv = _mm256_set1_ps(d);
  store_block32<true>(q, dv, dv, _mm256_set1_ps(m), y);
}

// Bit 4 of each element of a 5-bit block, as 0x10 or 0.
static inline __m256i fifth_bits(const uint8_t* qh) {
  return _mm256_and_si256(bits_to_bytes(load_u32(qh)), _mm256_set1_epi8(0x10));
}

void dequantize_q4_0(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, src += sizeof(block_q4_0), y += kQK) {
    const __m256i q = _mm256_sub_epi8(nibbles_to_bytes(load_128(src + 2)), _mm256_set1_epi8(8));
    store_scaled(q, half_at(src), y);
  }
}

void dequantize_q4_1(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, src += sizeof(block_q4_1), y += kQK) {
    store_scaled_offset(nibbles_to_bytes(load_128(src + 4)), half_at(src), half_at(src + 2), y);
  }
}

void dequantize_q5_0(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, src += sizeof(block_q5_0), y += kQK) {
    const __m256i q = _mm256_or_si256(nibbles_to_bytes(load_128(src + 6)), fifth_bits(src + 2));
    store_scaled(_mm256_sub_epi8(q, _mm256_set1_epi8(16)), half_at(src), y);
  }
}

void dequantize_q5_1(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, src += sizeof(block_q5_1), y += kQK) {
    const __m256i q = _mm256_or_si256(nibbles_to_bytes(load_128(src + 8)), fifth_bits(src + 4));
    store_scaled_offset(q, half_at(src), half_at(src + 2), y);
  }
}

void dequantize_q8_0(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, src += sizeof(block_q8_0), y += kQK) {
    store_scaled(load_256(src + 2), half_at(src), y);
  }
}

template <bool kFiveBits>
void dequantize_k4(const uint8_t* src, float* y, int64_t nb) {
  using Block = std::conditional_t<kFiveBits, block_q5_K, block_q4_K>;
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  for (int64_t i = 0; i < nb; ++i, src += sizeof(Block), y += kQKK) {
    const float d = half_at(src), dmin = half_at(src + 2);
    const uint8_t* qs = src + (kFiveBits ? 48 : 16);
    for (int sub = 0; sub < 8; ++sub) {
      uint8_t scale, min;
      get_scale_min_k4(sub, src + 4, &scale, &min);
      const __m256i packed = load_256(qs + 32 * (sub / 2));
      __m256i q = _mm256_and_si256(sub % 2 ? _mm256_srli_epi16(packed, 4) : packed, low4);
      if constexpr (kFiveBits) {
        const __m256i high = _mm256_and_si256(_mm256_srli_epi16(load_256(src + 16), sub), _mm256_set1_epi8(1));
        q = _mm256_or_si256(q, _mm256_slli_epi16(high, 4));
      }
      // y = (d * scale) * q - dmin * min, the subtraction written as adding -(dmin * min).
      store_scaled_offset(q, d * static_cast<float>(scale), -(dmin * static_cast<float>(min)), y + 32 * sub);
    }
  }
}

void dequantize_q6_K(const uint8_t* src, float* y, int64_t nb) {
  const __m256i low4 = _mm256_set1_epi8(0x0f), two_bits = _mm256_set1_epi8(3);
  for (int64_t i = 0; i < nb; ++i, src += sizeof(block_q6_K), y += kQKK) {
    const float d = half_at(src + 208);
    const auto* scales = reinterpret_cast<const int8_t*>(src + 192);
    for (int h = 0; h < 2; ++h) {
      const __m256i ql[2] = {load_256(src + 64 * h), load_256(src + 64 * h + 32)};
      const __m256i qh = load_256(src + 128 + 32 * h);
      for (int k = 0; k < 4; ++k) {
        const __m256i low = _mm256_and_si256(k < 2 ? ql[k] : _mm256_srli_epi16(ql[k - 2], 4), low4);
        const __m256i high = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * k), two_bits);
        const __m256i q = _mm256_sub_epi8(_mm256_or_si256(low, _mm256_slli_epi16(high, 4)),
                                          _mm256_set1_epi8(32));
        const int g = 8 * h + 2 * k;
        const __m256 d_first = _mm256_set1_ps(d * static_cast<float>(scales[g]));
        const __m256 d_second = _mm256_set1_ps(d * static_cast<float>(scales[g + 1]));
        store_block32<false>(q, d_first, d_second, d_first, y + 128 * h + 32 * k);
      }
    }
  }
}

template <typename Format>
void convert_floats(const uint8_t* src, float* y, int64_t n) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(y + j, Format::load8(src + j * Format::kBytes));
  for (; j < n; ++j) y[j] = Format::load1(src + j * Format::kBytes);
}

}  // namespace

void dequantize_row(GgmlType type, const void* src_row, float* y, int64_t n) {
  const auto* src = static_cast<const uint8_t*>(src_row);
  switch (type) {
    case GgmlType::Q4_0: return dequantize_q4_0(src, y, n / kQK);
    case GgmlType::Q4_1: return dequantize_q4_1(src, y, n / kQK);
    case GgmlType::Q5_0: return dequantize_q5_0(src, y, n / kQK);
    case GgmlType::Q5_1: return dequantize_q5_1(src, y, n / kQK);
    case GgmlType::Q8_0: return dequantize_q8_0(src, y, n / kQK);
    case GgmlType::Q4_K: return dequantize_k4<false>(src, y, n / kQKK);
    case GgmlType::Q5_K: return dequantize_k4<true>(src, y, n / kQKK);
    case GgmlType::Q6_K: return dequantize_q6_K(src, y, n / kQKK);
    case GgmlType::F16: return convert_floats<F16>(src, y, n);
    case GgmlType::BF16: return convert_floats<BF16>(src, y, n);
    case GgmlType::F32: std::memcpy(y, src, static_cast<size_t>(n) * sizeof(float)); return;
    default: return reference::dequantize_row(type, src_row, y, n);  // activation formats, types without a kernel
  }
}

}  // namespace pagedchat::quant_avx2
#endif
