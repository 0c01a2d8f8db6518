// The AVX2 panel kernels of Q4_0, Q5_0, Q5_1, IQ4_NL and MXFP4 (panel_legacy.h): 16 rows, as two
// groups of 8 rows in 32-bit lanes, x up to 4 tokens per pass.
//
// As the Q4_1 kernel (panel_avx2.cpp): per block, row group and token, byte-pair multiplies
// (vpmaddubsw) of the unsigned nibbles, with the fifth bit merged in for Q5_0/Q5_1, against
// broadcast activation quads, summed in 16 bits (Q4_0: 8 multiplies of at most 2 * 15 * 127,
// 30480 in all; the 5-bit types 4 at a time, 31496), then one vpmaddwd into 32 bits per sum.
// Q4_0/Q5_0 add -offset x the activation quants' sum from the expanded row; Q5_1 its minimum
// terms, as Q4_1. The float steps are panel_legacy.h's, in its order.

#include <algorithm>
#include <type_traits>

#include "engine/quant/panel/panel_blocks.h"
#include "engine/quant/simd_avx2.h"

#if defined(PAGEDCHAT_QUANT_AVX2)
namespace pagedchat::quant_avx2 {
namespace {

constexpr int kMaxTokens = 4;
constexpr int kPrefetchBlocks = 4;

template <typename Block>
static inline void prefetch_ahead(const Block* at) {
  const char* p = reinterpret_cast<const char*>(at + kPrefetchBlocks);
  for (size_t b = 0; b < sizeof(Block); b += 64) _mm_prefetch(p + b, _MM_HINT_T0);
}
template <typename Act, typename Scales>
struct Token {
  const Act* y;
  const Scales* scales;
};

// The signed levels of IQ4_NL or MXFP4 in both 128-bit lanes, for vpshufb by nibble.
template <typename Panel>
__m256i level_table() {
  uint8_t t[16];
  for (int q = 0; q < 16; ++q) t[q] = static_cast<uint8_t>(static_cast<int8_t>(level_at_index<Panel>(q)));
  const __m128i lane = _mm_loadu_si128(reinterpret_cast<const __m128i*>(t));
  return _mm256_set_m128i(lane, lane);
}

// 8 rows' weight scales from row `first`: f16, or MXFP4's 2^(e - 128) (e < 2: subnormal).
template <typename Panel>
inline __m256 weight_scales(const Panel& b, int first) {
  if constexpr (requires { b.e; }) {
    const __m256i e = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.e + first)));
    const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
    const __m256i subnormal = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
    const __m256i small = _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e);
    return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, subnormal, small));
  } else {
    return _mm256_cvtph_ps(load_128(b.d + first));
  }
}

// IQ4_NL and MXFP4: the signed levels against the activation's quants, by the byte sign trick
// (|level| times the quant with the level's sign), each 16-bit pair sum (at most 2 x 127 x 127)
// widened at once; no offset.
template <typename Panel, typename Act, typename Scales, int T>
void level_tokens(int64_t nb, const Panel* blocks, const Token<Act, Scales>* tok, float* out, int64_t out_stride) {
  __m256 acc[T][2];
  for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  const __m256i low4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1), table = level_table<Panel>();
  for (int64_t i = 0; i < nb; ++i) {
    const Panel& b = blocks[i];
    prefetch_ahead(blocks + i);
#pragma GCC unroll 2
    for (int g = 0; g < 2; ++g) {
      __m256i s32[T];
      for (int t = 0; t < T; ++t) s32[t] = _mm256_setzero_si256();
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        const __m256i packed = load_256(b.q[c] + 32 * g);
        const __m256i low = _mm256_shuffle_epi8(table, _mm256_and_si256(packed, low4));
        const __m256i high = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(packed, 4), low4));
        const __m256i low_abs = _mm256_abs_epi8(low), high_abs = _mm256_abs_epi8(high);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) {
          const int8_t* q = tok[t].y[i].qs;
          const __m256i lo = _mm256_maddubs_epi16(low_abs, _mm256_sign_epi8(quad(q + 4 * c), low));
          const __m256i hi = _mm256_maddubs_epi16(high_abs, _mm256_sign_epi8(quad(q + 16 + 4 * c), high));
          s32[t] = _mm256_add_epi32(s32[t], _mm256_add_epi32(_mm256_madd_epi16(lo, ones), _mm256_madd_epi16(hi, ones)));
        }
      }
      const __m256 d_w = weight_scales(b, 8 * g);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const __m256 scale = _mm256_mul_ps(d_w, _mm256_set1_ps(tok[t].scales[i].d));
        acc[t][g] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(s32[t]), acc[t][g]);
      }
    }
  }
  for (int t = 0; t < T; ++t) {
    _mm256_storeu_ps(out + t * out_stride, acc[t][0]);
    _mm256_storeu_ps(out + t * out_stride + 8, acc[t][1]);
  }
}

template <typename Panel, typename Act, typename Scales, int T>
void legacy_tokens(int64_t nb, const Panel* blocks, const Token<Act, Scales>* tok, float* out, int64_t out_stride) {
  constexpr bool kMin = requires { blocks->m; };
  constexpr bool kFive = requires { blocks->qh; };
  constexpr int kWordsPerSum = kFive ? 2 : 4;  // words c per 16-bit sum (two multiplies each)
  __m256 acc[T][2];
  for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  const __m256i low4 = _mm256_set1_epi8(0x0f), bit4 = _mm256_set1_epi8(0x10), ones = _mm256_set1_epi16(1);
  for (int64_t i = 0; i < nb; ++i) {
    const Panel& b = blocks[i];
    prefetch_ahead(blocks + i);
#pragma GCC unroll 2
    for (int g = 0; g < 2; ++g) {
      __m256i s32[T], s16[T];
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        if constexpr (kMin) s32[t] = _mm256_setzero_si256();
        else s32[t] = _mm256_set1_epi32(tok[t].scales[i].offset);
      }
      __m256i qh = _mm256_setzero_si256();
      if constexpr (kFive) qh = load_256(b.qh + 32 * g);
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        const __m256i packed = load_256(b.q[c] + 32 * g);
        __m256i low = _mm256_and_si256(packed, low4);
        __m256i high = _mm256_and_si256(_mm256_srli_epi16(packed, 4), low4);
        if constexpr (kFive) {
          low = _mm256_or_si256(low, _mm256_and_si256(_mm256_slli_epi16(qh, 4 - c), bit4));
          high = _mm256_or_si256(high, _mm256_and_si256(_mm256_srli_epi16(qh, c), bit4));
        }
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) {
          const int8_t* q = tok[t].y[i].qs;
          const __m256i both = _mm256_add_epi16(_mm256_maddubs_epi16(low, quad(q + 4 * c)),
                                                _mm256_maddubs_epi16(high, quad(q + 16 + 4 * c)));
          s16[t] = c % kWordsPerSum == 0 ? both : _mm256_add_epi16(s16[t], both);
          keep_in_register(s16[t]);
          if (c % kWordsPerSum == kWordsPerSum - 1) s32[t] = _mm256_add_epi32(s32[t], _mm256_madd_epi16(s16[t], ones));
        }
      }
      const __m256 d_w = _mm256_cvtph_ps(load_128(b.d + 8 * g));
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const __m256 scale = _mm256_mul_ps(d_w, _mm256_set1_ps(tok[t].scales[i].d));
        acc[t][g] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(s32[t]), acc[t][g]);
      }
    }
  }
  if constexpr (kMin) {
    __m256 min[T][2];
    for (int t = 0; t < T; ++t) min[t][0] = min[t][1] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
      const __m256 m_lo = _mm256_cvtph_ps(load_128(blocks[i].m)), m_hi = _mm256_cvtph_ps(load_128(blocks[i].m + 8));
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const __m256 s_a = _mm256_set1_ps(tok[t].scales[i].s);
        min[t][0] = _mm256_fmadd_ps(m_lo, s_a, min[t][0]);
        min[t][1] = _mm256_fmadd_ps(m_hi, s_a, min[t][1]);
      }
    }
    for (int t = 0; t < T; ++t) {
      acc[t][0] = _mm256_add_ps(acc[t][0], min[t][0]);
      acc[t][1] = _mm256_add_ps(acc[t][1], min[t][1]);
    }
  }
  for (int t = 0; t < T; ++t) {
    _mm256_storeu_ps(out + t * out_stride, acc[t][0]);
    _mm256_storeu_ps(out + t * out_stride + 8, acc[t][1]);
  }
}

template <typename Panel, typename Act, typename Scales>
void over_tokens(int64_t cols, const void* packed, int64_t panel, int64_t num_rows, const void* act,
                 size_t act_row_bytes, const void* expanded, int64_t num_tokens, float* out, int64_t out_stride) {
  const int64_t nb = cols / kQK;
  const auto* blocks = static_cast<const Panel*>(packed) + panel * nb;
  const auto* a = static_cast<const uint8_t*>(act);
  const auto* x = static_cast<const uint8_t*>(expanded);
  const size_t scales_bytes = static_cast<size_t>(nb) * sizeof(Scales);
  over_four_token_passes(num_tokens, num_rows, out, out_stride, [&](int64_t t0, auto n, float* o, int64_t stride) {
    Token<Act, Scales> tok[kMaxTokens];
    for (int t = 0; t < n; ++t) {
      tok[t] = {reinterpret_cast<const Act*>(a + (t0 + t) * act_row_bytes),
                reinterpret_cast<const Scales*>(x + (t0 + t) * scales_bytes)};
    }
    if constexpr (kLevelPanel<Panel>) level_tokens<Panel, Act, Scales, n>(nb, blocks, tok, o, stride);
    else legacy_tokens<Panel, Act, Scales, n>(nb, blocks, tok, o, stride);
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

}  // namespace pagedchat::quant_avx2
#endif
