// The AVX2 kernels of the low-bit K-quant panels (panel_low_bits.h): 16 rows, as two groups of 8
// rows in 32-bit lanes, x up to 4 tokens per pass, against compact Q8_K activation rows.
//
// Q2_K, Q3_K: per group of 16 and token, 4 byte-pair multiplies (vpmaddubsw) of the group's
// unsigned quads against broadcast activation quads are summed in 16 bits (at most
// 4 * 2 * 7 * 127 = 7112) and one vpmaddwd against the rows' scales, each repeated in both
// 16-bit halves of its lane, gives scale * (q . a) in 32 bits. IQ4_XS's levels (-127..113) are
// multiplied signed: |level| against the activation quad given each level's sign (vpsignb), a
// pair at most 2 * 127 * 127 = 32258, so each multiply goes to 32 bits by itself. Q2_K's mins
// and Q3_K's -4 come back once a super-block through the activation's group sums, as in the
// AVX-512 kernel. The integer sums are exact and the float steps are panel_low_bits.h's, in its
// order: every lane equals the reference.

#include <cstdint>
#include <type_traits>

#include "engine/quant/panel/panel_blocks.h"
#include "engine/quant/simd_avx2.h"

#if defined(PAGEDCHAT_QUANT_AVX2)
namespace pagedchat::quant_avx2 {
namespace {

constexpr int kMaxTokens = 4;
constexpr int kPrefetchBlocks = 2;

// Bits 2 k and 2 k + 1 of every byte.
static inline __m256i two_bits(__m256i v, int k) {
  return _mm256_and_si256(k == 0 ? v : _mm256_srli_epi16(v, 2 * k), _mm256_set1_epi8(3));
}
static inline __m256i lanes_u8(const uint8_t* p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}
static inline __m256i lanes_s8(const int8_t* p) {
  return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}

// What differs between the formats, for row group h (rows 8 h .. 8 h + 7): a group's quads
// (unsigned for Q2_K and Q3_K, the signed levels for IQ4_XS), its scales in 16-bit pairs, and
// the factors of the activation's group sums, pair j against (sum of group 2 j, sum of 2 j + 1).
template <typename Panel>
struct LowBits;

template <>
struct LowBits<panel_q2_K> {
  static constexpr int kGroups = 16, kQuadsPerGroup = 4, kOffsetShift = 0;
  static constexpr bool kMin = true, kSigned = false;
  static __m256i quads(const panel_q2_K& b, int g, int k, int h) { return two_bits(load_256(b.q[g] + 32 * h), k); }
  static __m256i scale_pairs(const panel_q2_K& b, int g, int h) {
    const __m256i v = _mm256_and_si256(lanes_u8(b.scales[g] + 8 * h), _mm256_set1_epi32(0x0f));
    return _mm256_or_si256(v, _mm256_slli_epi32(v, 16));
  }
  static __m256i sum_factors(const panel_q2_K& b, int j, int h) {
    return pairs_of(_mm256_srli_epi32(lanes_u8(b.scales[2 * j] + 8 * h), 4),
                    _mm256_srli_epi32(lanes_u8(b.scales[2 * j + 1] + 8 * h), 4));
  }
};

template <>
struct LowBits<panel_q3_K> {
  static constexpr int kGroups = 16, kQuadsPerGroup = 4, kOffsetShift = 2;  // the format's -4
  static constexpr bool kMin = false, kSigned = false;
  static __m256i quads(const panel_q3_K& b, int g, int k, int h) {
    const __m256i qh = load_256(b.qh[g / 2] + 32 * h);
    const int bit = 4 * (g % 2) + k;  // to bit 2
    const __m256i high = bit < 2 ? _mm256_slli_epi16(qh, 2 - bit) : bit > 2 ? _mm256_srli_epi16(qh, bit - 2) : qh;
    return _mm256_or_si256(two_bits(load_256(b.q[g] + 32 * h), k), _mm256_and_si256(high, _mm256_set1_epi8(4)));
  }
  static __m256i scale_pairs(const panel_q3_K& b, int g, int h) { return s8_pairs(b.scales[g] + 8 * h); }
  static __m256i sum_factors(const panel_q3_K& b, int j, int h) {
    return pairs_of(lanes_s8(b.scales[2 * j] + 8 * h), lanes_s8(b.scales[2 * j + 1] + 8 * h));
  }
};

template <>
struct LowBits<panel_iq4_xs> {
  static constexpr int kGroups = 8, kQuadsPerGroup = 8, kOffsetShift = 0;
  static constexpr bool kMin = false, kSigned = true;  // no sums to take back
  static __m256i quads(const panel_iq4_xs& b, int s, int k, int h) {
    const __m256i levels = _mm256_broadcastsi128_si256(
        _mm_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113));
    const __m256i v = load_256(b.q[s][k % 4] + 32 * h);
    const __m256i nibbles = _mm256_and_si256(k < 4 ? v : _mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0f));
    return _mm256_shuffle_epi8(levels, nibbles);
  }
  static __m256i scale_pairs(const panel_iq4_xs& b, int s, int h) { return s8_pairs(b.scales[s] + 8 * h); }
};

template <typename Panel, int T>
void low_bits_tokens(int64_t nb, const Panel* blocks, const block_q8_K* const* y, float* out, int64_t out_stride) {
  using L = LowBits<Panel>;
  constexpr int kQuads = L::kQuadsPerGroup, kElements = 4 * kQuads;
  __m256 acc[T][2], mn[T][2];
  for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = mn[t][0] = mn[t][1] = _mm256_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const Panel& b = blocks[i];
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      __m256i sumi[T];
      for (int t = 0; t < T; ++t) sumi[t] = _mm256_setzero_si256();
#pragma GCC unroll 16
      for (int g = 0; g < L::kGroups; ++g) {
        prefetch_part<kPrefetchBlocks>(blocks + i, L::kGroups * h + g, 2 * L::kGroups);
        __m256i q[kQuads];
#pragma GCC unroll 8
        for (int k = 0; k < kQuads; ++k) q[k] = L::quads(b, g, k, h);
        const __m256i scale = L::scale_pairs(b, g, h);
        if constexpr (L::kSigned) {
          __m256i magnitude[kQuads];
#pragma GCC unroll 8
          for (int k = 0; k < kQuads; ++k) magnitude[k] = _mm256_sign_epi8(q[k], q[k]);
#pragma GCC unroll 4
          for (int t = 0; t < T; ++t) {
            const int8_t* a = y[t][i].qs + kElements * g;
#pragma GCC unroll 8
            for (int k = 0; k < kQuads; ++k) {
              const __m256i m = _mm256_maddubs_epi16(magnitude[k], _mm256_sign_epi8(quad(a + 4 * k), q[k]));
              sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(m, scale));
            }
          }
        } else {
#pragma GCC unroll 4
          for (int t = 0; t < T; ++t) {
            const int8_t* a = y[t][i].qs + kElements * g;
            __m256i s16 = _mm256_maddubs_epi16(q[0], quad(a));
#pragma GCC unroll 8
            for (int k = 1; k < kQuads; ++k) {
              s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(q[k], quad(a + 4 * k)));
              keep_in_register(s16);
            }
            sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(s16, scale));
          }
        }
      }
      const __m256 d_w = _mm256_cvtph_ps(load_128(b.d + 8 * h));
      if constexpr (L::kMin || L::kOffsetShift > 0) {
        __m256i factors[8];
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j) factors[j] = L::sum_factors(b, j, h);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) {
          __m256i sums = _mm256_setzero_si256();
#pragma GCC unroll 8
          for (int j = 0; j < 8; ++j) {
            const __m256i pair = _mm256_set1_epi32(static_cast<int>(load_u32(y[t][i].bsums + 2 * j)));
            sums = _mm256_add_epi32(sums, _mm256_madd_epi16(factors[j], pair));
          }
          const __m256 d_a = _mm256_set1_ps(y[t][i].d);
          if constexpr (L::kMin) {
            const __m256 dmin_w = _mm256_cvtph_ps(load_128(b.dmin + 8 * h));
            mn[t][h] = _mm256_fmadd_ps(_mm256_mul_ps(dmin_w, d_a), _mm256_cvtepi32_ps(sums), mn[t][h]);
          } else {
            sumi[t] = _mm256_sub_epi32(sumi[t], _mm256_slli_epi32(sums, L::kOffsetShift));
          }
        }
      }
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const __m256 d_a = _mm256_set1_ps(y[t][i].d);
        acc[t][h] = _mm256_fmadd_ps(_mm256_mul_ps(d_w, d_a), _mm256_cvtepi32_ps(sumi[t]), acc[t][h]);
      }
    }
  }
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < 2; ++h) {
      const __m256 v = L::kMin ? _mm256_sub_ps(acc[t][h], mn[t][h]) : acc[t][h];
      _mm256_storeu_ps(out + t * out_stride + 8 * h, v);
    }
}

template <typename Panel>
void over_tokens(int64_t cols, const void* packed, int64_t panel, int64_t num_rows, const void* act,
                 size_t act_row_bytes, int64_t num_tokens, float* out, int64_t out_stride) {
  const int64_t nb = cols / kQKK;
  const auto* blocks = static_cast<const Panel*>(packed) + panel * nb;
  const auto* a = static_cast<const uint8_t*>(act);
  over_four_token_passes(num_tokens, num_rows, out, out_stride, [&](int64_t t0, auto n, float* o, int64_t stride) {
    const block_q8_K* y[kMaxTokens];
    for (int t = 0; t < n; ++t) y[t] = reinterpret_cast<const block_q8_K*>(a + (t0 + t) * act_row_bytes);
    low_bits_tokens<Panel, n>(nb, blocks, y, o, stride);
  });
}

}  // namespace

void low_bits_panel_dot(GgmlType type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows,
                        const void* act, size_t act_row_bytes, int64_t num_tokens, float* out, int64_t out_stride) {
  with_low_bits_panel(type, [&](auto layout) {
    using Panel = typename decltype(layout)::type;
    over_tokens<Panel>(cols, packed, panel, num_rows, act, act_row_bytes, num_tokens, out, out_stride);
  });
}

}  // namespace pagedchat::quant_avx2
#endif
