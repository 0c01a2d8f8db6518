// The AVX-512 VNNI panel kernels of Q4_0, Q5_0, Q5_1, IQ4_NL and MXFP4 (panel_legacy.h): one
// vector holds a panel's 16 rows, up to 8 tokens per pass. The level types look their nibbles up
// (vpshufb) as levels + 128, and start each block's sum at -128 x the activation's, as Q4_0 does
// with its 8.
//
// As the Q4_1 kernel (panel_avx512.cpp): per block and token, 8 four-way byte dots (vpdpbusd) of
// the unsigned nibbles, with the fifth bit merged in for Q5_0/Q5_1, against broadcast activation
// quads. Q4_0/Q5_0 start each block's sum at -offset x the activation quants' sum (from the
// expanded row), which applies the format's -8 or -16 exactly; Q5_1 adds its minimum terms in
// a pass of their own, as Q4_1. The float steps are panel_legacy.h's, in its order.

#include "engine/quant/quant_avx512.h"

#include <cstring>
#include <type_traits>

#include "engine/quant/panel/panel_blocks.h"
#include "engine/quant/simd_avx512.h"

#if defined(PAGEDCHAT_QUANT_AVX512)

namespace pagedchat::quant_avx512 {
namespace {

constexpr int kPrefetchBlocks = 4;

// IQ4_NL's and MXFP4's levels + 128 as unsigned bytes (the expanded row's offset takes the 128
// back), in every 128-bit lane for vpshufb by nibble.
template <typename Panel>
__m512i level_table() {
  uint8_t t[16];
  for (int q = 0; q < 16; ++q) t[q] = static_cast<uint8_t>(level_at_index<Panel>(q) + 128);
  return _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t)));
}

// MXFP4's 16 scale bytes as floats 2^(e - 128), as e8m0_half (e < 2: subnormal).
static inline __m512 e8m0_halves(const uint8_t* e) {
  const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(e)));
  const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(v, _mm512_set1_epi32(1)), 23);
  const __m512i subnormal = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), v);
  return _mm512_castsi512_ps(_mm512_mask_blend_epi32(_mm512_cmplt_epu32_mask(v, _mm512_set1_epi32(2)), normal, subnormal));
}

template <typename Panel>
inline __m512 weight_scales(const Panel& b) {
  if constexpr (requires { b.e; }) return e8m0_halves(b.e);
  else return halves(b.d);
}

template <typename Panel, typename Act, typename Scales, int T>
void legacy_tokens(int64_t nb, const Panel* blocks, const BlockTokens<Act, Scales>& tok, float* out, int64_t out_stride,
                   __mmask16 rows) {
  constexpr bool kMin = requires { blocks->m; };
  constexpr bool kFive = requires { blocks->qh; };
  constexpr bool kLevels = kLevelPanel<Panel>;
  constexpr int kChains = T < 4 ? 2 : 1;
  __m512i table = _mm512_setzero_si512();
  if constexpr (kLevels) table = level_table<Panel>();
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  const __m512i low4 = _mm512_set1_epi8(0x0f), bit4 = _mm512_set1_epi8(0x10);
  for (int64_t i = 0; i < nb; ++i) {
    const Panel& b = blocks[i];
    prefetch_ahead<kPrefetchBlocks>(blocks + i);
    __m512i sum[T][kChains];
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      if constexpr (kMin) sum[t][0] = _mm512_setzero_si512();
      else sum[t][0] = _mm512_set1_epi32(tok.scales[t][i].offset);
      if constexpr (kChains == 2) sum[t][1] = _mm512_setzero_si512();
    }
    __m512i qh = _mm512_setzero_si512();
    if constexpr (kFive) qh = _mm512_loadu_si512(b.qh);
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      const __m512i packed = _mm512_loadu_si512(b.q[c]);
      __m512i low = _mm512_and_si512(packed, low4);
      __m512i high = _mm512_and_si512(_mm512_srli_epi16(packed, 4), low4);
      if constexpr (kFive) {
        low = _mm512_or_si512(low, _mm512_and_si512(_mm512_slli_epi16(qh, static_cast<unsigned>(4 - c)), bit4));
        high = _mm512_or_si512(high, _mm512_and_si512(_mm512_srli_epi16(qh, static_cast<unsigned>(c)), bit4));
      }
      if constexpr (kLevels) {
        low = _mm512_shuffle_epi8(table, low);
        high = _mm512_shuffle_epi8(table, high);
      }
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const int8_t* q = tok.y[t][i].qs;
        sum[t][0] = dot_quad(sum[t][0], low, q + 4 * c);
        sum[t][kChains - 1] = dot_quad(sum[t][kChains - 1], high, q + 16 + 4 * c);
      }
    }
    const __m512 d_w = weight_scales(b);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const __m512i s = kChains == 2 ? _mm512_add_epi32(sum[t][0], sum[t][kChains - 1]) : sum[t][0];
      const __m512 scale = _mm512_mul_ps(d_w, _mm512_set1_ps(tok.scales[t][i].d));
      acc[t] = _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(s), acc[t]);
    }
  }
  if constexpr (kMin) {
    __m512 min[T];
    for (int t = 0; t < T; ++t) min[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
      const __m512 m_w = halves(blocks[i].m);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) min[t] = _mm512_fmadd_ps(m_w, _mm512_set1_ps(tok.scales[t][i].s), min[t]);
    }
    for (int t = 0; t < T; ++t) acc[t] = _mm512_add_ps(acc[t], min[t]);
  }
  for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(out + t * out_stride, rows, acc[t]);
}

template <typename Panel, typename Act, typename Scales>
void over_tokens(int64_t cols, const void* packed, int64_t panel, int64_t num_rows, const void* act,
                 size_t act_row_bytes, const void* expanded, int64_t num_tokens, float* out, int64_t out_stride) {
  const int64_t nb = cols / kQK;
  const auto* blocks = static_cast<const Panel*>(packed) + panel * nb;
  over_block_token_passes<Act, Scales>(nb, act, act_row_bytes, expanded, num_tokens,
                                       [&](int64_t t0, auto n, const BlockTokens<Act, Scales>& tok) {
                                         legacy_tokens<Panel, Act, Scales, n>(nb, blocks, tok, out + t0 * out_stride,
                                                                              out_stride, row_lanes(num_rows));
                                       });
}

}  // namespace

void legacy_panel_dot(GgmlType type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows,
                      const void* act, size_t act_row_bytes, const void* expanded, int64_t num_tokens, float* out,
                      int64_t out_stride) {
  with_legacy_panel(type, [&](auto layout) {
    using L = decltype(layout);
    over_tokens<typename L::panel, typename L::act, typename L::scales>(cols, packed, panel, num_rows, act, act_row_bytes,
                                                                        expanded, num_tokens, out, out_stride);
  });
}

}  // namespace pagedchat::quant_avx512
#endif
