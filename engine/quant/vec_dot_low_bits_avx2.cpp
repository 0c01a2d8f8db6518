// AVX2 dot products of the low-bit formats that mixtures of experts ship in: IQ4_NL and MXFP4
// against Q8_0, Q2_K, Q3_K and IQ4_XS against Q8_K. Each forms a block's (or super-block's)
// integer sums exactly, as the scalar reference does; the float steps differ from the reference's
// (DotLevels keeps 8 lanes of fma, Q2_K fmas its min term apart), within the rounding bound
// test_quant holds them to.
// The non-uniform levels of IQ4_NL/IQ4_XS and MXFP4 are a byte shuffle of the nibbles.

#include "engine/quant/quant_avx2.h"
#include "engine/quant/quant_blocks.h"
#include "engine/quant/simd_avx2.h"
#include "engine/quant/vec_dot_rows_avx2.h"

#if defined(PAGEDCHAT_QUANT_AVX2)
namespace pagedchat::quant_avx2 {
namespace {

// A level table in both 128-bit lanes, for _mm256_shuffle_epi8 by nibble.
static inline __m256i level_table(uint64_t low8, uint64_t high8) {
  const __m128i t = _mm_set_epi64x(static_cast<int64_t>(high8), static_cast<int64_t>(low8));
  return _mm256_set_m128i(t, t);
}

struct IQ4_NL {
  using Block = block_iq4_nl;
  static constexpr int kQuantsAt = 2;
  static __m256i table() { return level_table(0xf6eaddcfbfad9881ull, 0x7159453526190d01ull); }
  static float scale(const uint8_t* b) { return half_at(b); }
};
struct MXFP4 {
  using Block = block_mxfp4;
  static constexpr int kQuantsAt = 1;
  static __m256i table() { return level_table(0x0c08060403020100ull, 0xf4f8fafcfdfeff00ull); }
  static float scale(const uint8_t* b) { return e8m0_half(b[0]); }
};

// 32-element blocks of levels against Q8_0.
template <typename Format>
struct DotLevels {
  template <int R>
  static void rows(int64_t n, const uint8_t* w, size_t stride, const void* act, float* out, bool prefetch) {
    constexpr size_t block_bytes = sizeof(typename Format::Block);
    const auto* y = static_cast<const block_q8_0*>(act);
    const __m256i table = Format::table();
    __m256 acc[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / kQK; ++i) {
      // Each line of the next rows once, as the blocks (17 or 18 bytes) enter it.
      if (prefetch && i * block_bytes % kCacheLine < block_bytes) prefetch_next_rows<R>(w, stride, i * block_bytes, 1);
      const __m256i qy = load_256(y[i].qs);
      const float dy = half_at(&y[i].d);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const uint8_t* b = w + r * stride + i * block_bytes;
        const __m256i levels = _mm256_shuffle_epi8(table, nibbles_to_bytes(load_128(b + Format::kQuantsAt)));
        const __m256i dot = dot_i8_i8(levels, qy);
        acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(Format::scale(b) * dy), _mm256_cvtepi32_ps(dot), acc[r]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) out[r] = hsum(acc[r]);
  }
};

// int16 scales of groups g and g + 1 (bytes of `scales8`, signed) over 8 lanes each.
static inline __m256i scale_pair(__m128i scales8, int g) {
  const __m128i pick = _mm_set_epi64x(0x0101010101010101ll * (g + 1), 0x0101010101010101ll * g);
  return _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales8, pick));
}

// The 2-bit fields k = 0..3 of 32 bytes: elements 32k + l of a Q2_K/Q3_K half.
static inline __m256i two_bits(__m256i packed, int k) {
  return _mm256_and_si256(_mm256_srli_epi16(packed, 2 * k), _mm256_set1_epi8(3));
}

// sum_g scale_g (q . q_a)_g over a Q2_K/Q3_K super-block's 16 groups, the unsigned quants of
// elements 128h + 32k + l given by quants(h, k, the half's 32 low-bit bytes), in 8 int32 lanes.
template <typename Quants>
static inline __m256i scaled_group_dots(const uint8_t* qs, const int8_t* qa, __m128i scales8, Quants quants) {
  __m256i sumi = _mm256_setzero_si256();
  for (int h = 0; h < 2; ++h) {
    const __m256i packed = load_256(qs + 32 * h);
    for (int k = 0; k < 4; ++k) {
      const __m256i p = _mm256_maddubs_epi16(quants(h, k, packed), load_256(qa + 128 * h + 32 * k));
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, scale_pair(scales8, 8 * h + 2 * k)));
    }
  }
  return sumi;
}

struct DotQ2K {
  template <int R>
  static void rows(int64_t n, const uint8_t* w, size_t stride, const void* act, float* out, bool prefetch) {
    const auto* y = static_cast<const block_q8_K*>(act);
    float acc[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[r] = 0.0f;
    for (int64_t i = 0; i < n / kQKK; ++i) {
      if (prefetch) prefetch_next_rows<R>(w, stride, i * sizeof(block_q2_K), sizeof(block_q2_K));
      const __m128 dy = _mm_set1_ps(y[i].d);
      const __m256i bsums = load_256(y[i].bsums);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const uint8_t* b = w + r * stride + i * sizeof(block_q2_K);
        const __m128 d_dmin = _mm_mul_ps(half_pair_at(b + offsetof(block_q2_K, d)), dy);
        const __m128i packed_scales = load_128(b);
        const __m128i scales8 = _mm_and_si128(packed_scales, _mm_set1_epi8(0x0f));
        const __m128i mins8 = _mm_and_si128(_mm_srli_epi16(packed_scales, 4), _mm_set1_epi8(0x0f));
        const int summins = hsum(_mm256_madd_epi16(bsums, _mm256_cvtepu8_epi16(mins8)));
        const __m256i sumi = scaled_group_dots(b + offsetof(block_q2_K, qs), y[i].qs, scales8,
                                               [](int, int k, __m256i packed) { return two_bits(packed, k); });
        acc[r] = fma_ss(_mm_cvtss_f32(d_dmin), static_cast<float>(hsum(sumi)), acc[r]);
        acc[r] = fma_ss(-_mm_cvtss_f32(_mm_movehdup_ps(d_dmin)), static_cast<float>(summins), acc[r]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) out[r] = acc[r];
  }
};

// The 16 signed scales of a Q3_K super-block (get_scale_q3_K) as bytes, four at a time: scales
// 4q..4q+3 take the nibbles of bytes 0-3 or 4-7 (low for q < 2, high after) and their top two
// bits from bits 2q of bytes 8-11, as ggml's dequantize_row_q3_K unpacks them.
static inline __m128i unpack_scales_q3_K(const uint8_t* packed) {
  const uint32_t a0 = load_u32(packed), a1 = load_u32(packed + 4), a2 = load_u32(packed + 8);
  const uint32_t low4 = 0x0f0f0f0fu, two = 0x03030303u;
  const uint32_t s0 = (a0 & low4) | ((a2 & two) << 4);
  const uint32_t s1 = (a1 & low4) | (((a2 >> 2) & two) << 4);
  const uint32_t s2 = ((a0 >> 4) & low4) | (((a2 >> 4) & two) << 4);
  const uint32_t s3 = ((a1 >> 4) & low4) | (((a2 >> 6) & two) << 4);
  const __m128i unsigned6 = _mm_set_epi32(static_cast<int>(s3), static_cast<int>(s2), static_cast<int>(s1), static_cast<int>(s0));
  return _mm_sub_epi8(unsigned6, _mm_set1_epi8(32));
}

// Q3_K: q + 4 = low 2 bits | hmask bit << 2 is unsigned (0..7), so q . y = (q + 4) . y - 4 sum(y),
// the second term per group from the activation's bsums.
struct DotQ3K {
  template <int R>
  static void rows(int64_t n, const uint8_t* w, size_t stride, const void* act, float* out, bool prefetch) {
    const auto* y = static_cast<const block_q8_K*>(act);
    float acc[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[r] = 0.0f;
    const __m256i one = _mm256_set1_epi8(1);
    for (int64_t i = 0; i < n / kQKK; ++i) {
      if (prefetch) prefetch_next_rows<R>(w, stride, i * sizeof(block_q3_K), sizeof(block_q3_K));
      const float dy = y[i].d;
      const __m256i bsums = load_256(y[i].bsums);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const uint8_t* b = w + r * stride + i * sizeof(block_q3_K);
        const __m128i scales8 = unpack_scales_q3_K(b + offsetof(block_q3_K, scales));
        const int offset = hsum(_mm256_madd_epi16(_mm256_cvtepi8_epi16(scales8), bsums));
        const __m256i hmask = load_256(b);
        const __m256i sumi = scaled_group_dots(b + offsetof(block_q3_K, qs), y[i].qs, scales8, [&](int h, int k, __m256i packed) {
          const __m256i high = _mm256_and_si256(_mm256_srli_epi16(hmask, 4 * h + k), one);
          return _mm256_or_si256(two_bits(packed, k), _mm256_slli_epi16(high, 2));
        });
        const float d = dy * half_at(b + offsetof(block_q3_K, d));
        acc[r] = fma_ss(d, static_cast<float>(hsum(sumi) - 4 * offset), acc[r]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) out[r] = acc[r];
  }
};

struct DotIQ4XS {
  template <int R>
  static void rows(int64_t n, const uint8_t* w, size_t stride, const void* act, float* out, bool prefetch) {
    const auto* y = static_cast<const block_q8_K*>(act);
    const __m256i table = IQ4_NL::table();
    float acc[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[r] = 0.0f;
    for (int64_t i = 0; i < n / kQKK; ++i) {
      if (prefetch) prefetch_next_rows<R>(w, stride, i * sizeof(block_iq4_xs), sizeof(block_iq4_xs));
      const float dy = y[i].d;
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const uint8_t* b = w + r * stride + i * sizeof(block_iq4_xs);
        const auto& block = *reinterpret_cast<const block_iq4_xs*>(b);
        __m256i sumi = _mm256_setzero_si256();
        for (int sub = 0; sub < 8; ++sub) {
          const __m256i levels = _mm256_shuffle_epi8(table, nibbles_to_bytes(load_128(b + offsetof(block_iq4_xs, qs) + 16 * sub)));
          const __m256i qy = load_256(y[i].qs + 32 * sub);
          const __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(levels, levels), _mm256_sign_epi8(qy, levels));
          const __m256i scale = _mm256_set1_epi16(static_cast<int16_t>(get_scale_iq4_xs(block, sub)));
          sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, scale));
        }
        acc[r] = fma_ss(dy * half_at(b), static_cast<float>(hsum(sumi)), acc[r]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) out[r] = acc[r];
  }
};

}  // namespace

void vec_dot_rows_low_bits(GgmlType type, int64_t n, const void* w, size_t stride, int64_t num_rows, const void* act,
                           float* out, WeightAccess access) {
  switch (type) {
    case GgmlType::IQ4_NL: return run_rows<DotLevels<IQ4_NL>>(n, w, stride, num_rows, act, out, access);
    case GgmlType::MXFP4: return run_rows<DotLevels<MXFP4>>(n, w, stride, num_rows, act, out, access);
    case GgmlType::Q2_K: return run_rows<DotQ2K>(n, w, stride, num_rows, act, out, access);
    case GgmlType::Q3_K: return run_rows<DotQ3K>(n, w, stride, num_rows, act, out, access);
    case GgmlType::IQ4_XS: return run_rows<DotIQ4XS>(n, w, stride, num_rows, act, out, access);
    default: break;  // vec_dot_rows sends only these
  }
}

}  // namespace pagedchat::quant_avx2
#endif
