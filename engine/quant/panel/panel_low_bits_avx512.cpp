// The AVX-512 VNNI kernels of the low-bit K-quant panels (panel_low_bits.h): one vector holds a
// panel's 16 rows, up to 8 tokens per pass, against compact Q8_K activation rows.
//
// Per group (16 elements; IQ4_XS: 32) and token, 4 (8) four-way byte dots (vpdpbusd) of the
// group's quads, unpacked in registers into unsigned bytes, against broadcast activation quads
// give each row's (q . a) in its own lane, and one 32-bit multiply by the rows' scales adds it
// to the super-block's sum. What the unsigned bytes leave out comes back once a super-block,
// through the activation's group sums: 8 16-bit pair dots (vpdpwssd) of the rows' factors of
// those sums (Q2_K: its mins; Q3_K: its scales, for the format's -4; IQ4_XS: its scales, for
// the levels' +128) against the sums taken in pairs from the Q8_K row. The integer sums are
// exact and the float steps are panel_low_bits.h's, in its order: every lane equals the reference.
// Unlike Q5_K's and Q6_K's, these kernels never unpack a panel into a buffer for a long call:
// with a 32-token threshold, 1B Q2_K, Q3_K_M and IQ4_XS prompts of 512 ran within this
// machine's noise of the in-register unpacking (2 rounds, alternated: 383-456 tok/s both ways).

#include "engine/quant/quant_avx512.h"

#include <cstdint>
#include <type_traits>

#include "engine/quant/panel/panel_blocks.h"
#include "engine/quant/simd_avx512.h"

#if defined(PAGEDCHAT_QUANT_AVX512)

namespace pagedchat::quant_avx512 {
namespace {

constexpr int kPrefetchBlocks = 2;

static inline __m512i load_512(const void* p) { return _mm512_loadu_si512(p); }
static inline __m512i bytes_to_lanes(const uint8_t* p) {
  return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
static inline __m512i bytes_to_lanes(const int8_t* p) {
  return _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
// Two vectors of 16 32-bit values as 16-bit pairs (lo, hi) in each lane.
static inline __m512i pairs_of(__m512i lo, __m512i hi) {
  return _mm512_or_si512(_mm512_and_si512(lo, _mm512_set1_epi32(0xffff)), _mm512_slli_epi32(hi, 16));
}
// Bits 2 k and 2 k + 1 of every byte.
static inline __m512i two_bits(__m512i v, int k) {
  return _mm512_and_si512(k == 0 ? v : _mm512_srli_epi16(v, static_cast<unsigned>(2 * k)), _mm512_set1_epi8(3));
}

// What differs between the formats: a group's quads as unsigned bytes, its scales, and the
// factors of the activation's group sums, pair j against (sum of group 2 j, sum of 2 j + 1).
template <typename Panel>
struct LowBits;

template <>
struct LowBits<panel_q2_K> {
  static constexpr int kGroups = 16, kQuadsPerGroup = 4;
  static constexpr bool kMin = true;  // the factors are the mins, summed into mn
  static __m512i quads(const panel_q2_K& b, int g, int k) { return two_bits(load_512(b.q[g]), k); }
  static __m512i scales(const panel_q2_K& b, int g) {
    return _mm512_and_si512(bytes_to_lanes(b.scales[g]), _mm512_set1_epi32(0x0f));
  }
  static __m512i sum_factors(const panel_q2_K& b, int j) {
    return pairs_of(_mm512_srli_epi32(bytes_to_lanes(b.scales[2 * j]), 4),
                    _mm512_srli_epi32(bytes_to_lanes(b.scales[2 * j + 1]), 4));
  }
};

template <>
struct LowBits<panel_q3_K> {
  static constexpr int kGroups = 16, kQuadsPerGroup = 4;
  static constexpr bool kMin = false;
  static constexpr int kOffsetShift = 2;  // the format's -4
  static __m512i quads(const panel_q3_K& b, int g, int k) {
    const __m512i qh = load_512(b.qh[g / 2]);
    const int bit = 4 * (g % 2) + k;  // to bit 2
    const __m512i high = bit < 2   ? _mm512_slli_epi16(qh, static_cast<unsigned>(2 - bit))
                         : bit > 2 ? _mm512_srli_epi16(qh, static_cast<unsigned>(bit - 2))
                                   : qh;
    return _mm512_or_si512(two_bits(load_512(b.q[g]), k), _mm512_and_si512(high, _mm512_set1_epi8(4)));
  }
  static __m512i scales(const panel_q3_K& b, int g) { return bytes_to_lanes(b.scales[g]); }
  static __m512i sum_factors(const panel_q3_K& b, int j) {
    return pairs_of(bytes_to_lanes(b.scales[2 * j]), bytes_to_lanes(b.scales[2 * j + 1]));
  }
};

template <>
struct LowBits<panel_iq4_xs> {
  static constexpr int kGroups = 8, kQuadsPerGroup = 8;
  static constexpr bool kMin = false;
  static constexpr int kOffsetShift = 7;  // the levels' +128
  static __m512i quads(const panel_iq4_xs& b, int s, int k) {
    // The 16 levels + 128 (1..241), in every 128-bit lane for the byte shuffle.
    const __m512i levels = _mm512_broadcast_i32x4(
        _mm_setr_epi8(1, 24, 45, 63, 79, 93, 106, 118, -127, -115, -103, -90, -75, -59, -39, -15));
    const __m512i v = load_512(b.q[s][k % 4]);
    const __m512i nibbles = _mm512_and_si512(k < 4 ? v : _mm512_srli_epi16(v, 4), _mm512_set1_epi8(0x0f));
    return _mm512_shuffle_epi8(levels, nibbles);
  }
  static __m512i scales(const panel_iq4_xs& b, int s) { return bytes_to_lanes(b.scales[s]); }
  // Sub-block j's scale against both of its 16-element sums.
  static __m512i sum_factors(const panel_iq4_xs& b, int j) {
    const __m512i scale = bytes_to_lanes(b.scales[j]);
    return pairs_of(scale, scale);
  }
};

template <typename Panel, int T>
void low_bits_tokens(int64_t nb, const Panel* blocks, const block_q8_K* const* y, float* out, int64_t out_stride,
                     __mmask16 rows) {
  using L = LowBits<Panel>;
  constexpr int kQuads = L::kQuadsPerGroup, kElements = 4 * kQuads;
  constexpr int kChains = kQuads > 4 ? 2 : 1;  // IQ4_XS: two dependent chains of 4 dots
  __m512 acc[T], mn[T];
  for (int t = 0; t < T; ++t) acc[t] = mn[t] = _mm512_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const Panel& b = blocks[i];
    __m512i sumi[T];
    for (int t = 0; t < T; ++t) sumi[t] = _mm512_setzero_si512();
#pragma GCC unroll 16
    for (int g = 0; g < L::kGroups; ++g) {
      prefetch_part<kPrefetchBlocks>(blocks + i, g, L::kGroups);
      __m512i q[kQuads];
#pragma GCC unroll 8
      for (int k = 0; k < kQuads; ++k) q[k] = L::quads(b, g, k);
      const __m512i scale = L::scales(b, g);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const int8_t* a = y[t][i].qs + kElements * g;
        __m512i dot[kChains];
        for (int c = 0; c < kChains; ++c) dot[c] = _mm512_setzero_si512();
#pragma GCC unroll 8
        for (int k = 0; k < kQuads; ++k) dot[k % kChains] = dot_quad(dot[k % kChains], q[k], a + 4 * k);
        const __m512i d = kChains == 2 ? _mm512_add_epi32(dot[0], dot[kChains - 1]) : dot[0];
        sumi[t] = _mm512_add_epi32(sumi[t], _mm512_mullo_epi32(d, scale));
      }
    }
    __m512i factors[8];
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) factors[j] = L::sum_factors(b, j);
    const __m512 d_w = halves(b.d);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      __m512i sums = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) sums = dot_pair(sums, factors[j], y[t][i].bsums + 2 * j);
      const __m512 d_a = _mm512_set1_ps(y[t][i].d);
      if constexpr (L::kMin) {
        mn[t] = _mm512_fmadd_ps(_mm512_mul_ps(halves(b.dmin), d_a), _mm512_cvtepi32_ps(sums), mn[t]);
      } else {
        sumi[t] = _mm512_sub_epi32(sumi[t], _mm512_slli_epi32(sums, L::kOffsetShift));
      }
      acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(d_w, d_a), _mm512_cvtepi32_ps(sumi[t]), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) {
    _mm512_mask_storeu_ps(out + t * out_stride, rows, L::kMin ? _mm512_sub_ps(acc[t], mn[t]) : acc[t]);
  }
}

template <typename Panel>
void over_tokens(int64_t cols, const void* packed, int64_t panel, int64_t num_rows, const void* act,
                 size_t act_row_bytes, int64_t num_tokens, float* out, int64_t out_stride) {
  const int64_t nb = cols / kQKK;
  const auto* blocks = static_cast<const Panel*>(packed) + panel * nb;
  const auto* a = static_cast<const uint8_t*>(act);
  over_token_passes(num_tokens, [&](int64_t t0, auto n) {
    const block_q8_K* y[kMaxPassTokens];
    for (int t = 0; t < n; ++t) y[t] = reinterpret_cast<const block_q8_K*>(a + (t0 + t) * act_row_bytes);
    low_bits_tokens<Panel, n>(nb, blocks, y, out + t0 * out_stride, out_stride, row_lanes(num_rows));
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

}  // namespace pagedchat::quant_avx512
#endif
