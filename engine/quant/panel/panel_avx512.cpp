// The AVX-512 VNNI panel kernels (panel.h): one vector holds a panel's 16 rows, up to 8 tokens
// per pass.
//
// Per block and token, a 4-way byte dot (vpdpbusd: unsigned x signed bytes, 4 products added
// into each 32-bit lane) of a panel vector against a broadcast activation quad adds 4 elements
// of all 16 rows into their own lanes, so a block is 8 such instructions into one integer
// vector per token, exact, with nothing to widen or reduce. Q4_1: the 4 panel vectors give the
// low and high nibbles (unsigned, 0..15). Q8_0: the weights are signed, so the kernel flips
// their sign bit (w + 128, unsigned) and starts the sum at -128 x the activation quants' sum,
// precomputed per block in the expanded row. The float math per lane is panel.h's, in its
// order, so every lane equals the scalar reference bit for bit.

#include "engine/quant/quant_avx512.h"

#include <cstring>

#include "engine/quant/panel/panel_blocks.h"
#include "engine/quant/simd_avx512.h"

#if defined(PAGEDCHAT_QUANT_AVX512)
namespace pagedchat::quant_avx512 {
namespace {

constexpr int kRows = 16;       // panel.h's kPanelRows: one 512-bit vector of 32-bit lanes
constexpr int kPrefetchBlocks = 4;

// panel.h's per-block step for T tokens: acc += (d_w * d_a) * float(the block's integer sum),
// the sum being split over Chains registers.
template <int T, int Chains, typename Tok>
static inline void add_block(__m512 (&acc)[T], __m512i (&sum)[T][Chains], __m512 d_w, const Tok& tok, int64_t i) {
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
    const __m512i s = Chains == 2 ? _mm512_add_epi32(sum[t][0], sum[t][Chains - 1]) : sum[t][0];
    const __m512 scale = _mm512_mul_ps(d_w, _mm512_set1_ps(tok.scales[t][i].d));
    acc[t] = _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(s), acc[t]);
  }
}

// Q4_1, T tokens per pass; the minimum terms in their own pass afterwards, as in panel.h.
template <int T>
void q4_1_tokens(int64_t nb, const panel_q4_1* blocks, const BlockTokens<block_q8_1, vnni_q8_1_scales>& tok, float* out,
                 int64_t out_stride, __mmask16 rows) {
  // With few tokens each sum is a chain of dependent dots; two chains per token hide latency.
  constexpr int kChains = T < 4 ? 2 : 1;
  __m512 acc[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  for (int64_t i = 0; i < nb; ++i) {
    const panel_q4_1& b = blocks[i];
    prefetch_ahead<kPrefetchBlocks>(blocks + i);
    __m512i sum[T][kChains];
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t)
      for (int k = 0; k < kChains; ++k) sum[t][k] = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      const __m512i packed = _mm512_loadu_si512(b.q[c]);
      const __m512i low = _mm512_and_si512(packed, low4);
      const __m512i high = _mm512_and_si512(_mm512_srli_epi16(packed, 4), low4);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const int8_t* q = tok.y[t][i].qs;
        sum[t][0] = dot_quad(sum[t][0], low, q + 4 * c);
        sum[t][kChains - 1] = dot_quad(sum[t][kChains - 1], high, q + 16 + 4 * c);
      }
    }
    add_block<T, kChains>(acc, sum, halves(b.d), tok, i);
  }
  __m512 min[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) min[t] = _mm512_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const __m512 m_w = halves(blocks[i].m);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) min[t] = _mm512_fmadd_ps(m_w, _mm512_set1_ps(tok.scales[t][i].s), min[t]);
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(out + t * out_stride, rows, _mm512_add_ps(acc[t], min[t]));
}

// Q8_0, T tokens per pass.
template <int T>
void q8_0_tokens(int64_t nb, const panel_q8_0* blocks, const BlockTokens<block_q8_0, vnni_q8_0_scales>& tok, float* out,
                 int64_t out_stride, __mmask16 rows) {
  constexpr int kChains = T < 4 ? 2 : 1;
  __m512 acc[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  const __m512i sign = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int64_t i = 0; i < nb; ++i) {
    const panel_q8_0& b = blocks[i];
    prefetch_ahead<kPrefetchBlocks>(blocks + i);
    __m512i sum[T][kChains];
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      sum[t][0] = _mm512_set1_epi32(tok.scales[t][i].offset);
      if constexpr (kChains == 2) sum[t][1] = _mm512_setzero_si512();
    }
#pragma GCC unroll 8
    for (int c = 0; c < 8; ++c) {
      const __m512i w = _mm512_xor_si512(_mm512_loadu_si512(b.q[c]), sign);  // w + 128 as unsigned
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        __m512i& s = sum[t][c % kChains];
        s = dot_quad(s, w, tok.y[t][i].qs + 4 * c);
      }
    }
    add_block<T, kChains>(acc, sum, halves(b.d), tok, i);
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(out + t * out_stride, rows, acc[t]);
}

}  // namespace

bool cpu_supported() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("f16c");
}

void panel_dot(GgmlType type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows, const void* act,
               size_t act_row_bytes, const void* expanded, int64_t num_tokens, float* out, int64_t out_stride) {
  static_assert(kRows == 16, "a panel is one vector of 16 lanes");
  const int64_t nb = cols / kQK;
  if (type == GgmlType::Q4_1) {
    const auto* blocks = static_cast<const panel_q4_1*>(packed) + panel * nb;
    return over_block_token_passes<block_q8_1, vnni_q8_1_scales>(
        nb, act, act_row_bytes, expanded, num_tokens, [&](int64_t t0, auto n, const auto& tok) {
          q4_1_tokens<n>(nb, blocks, tok, out + t0 * out_stride, out_stride, row_lanes(num_rows));
        });
  }
  const auto* blocks = static_cast<const panel_q8_0*>(packed) + panel * nb;
  over_block_token_passes<block_q8_0, vnni_q8_0_scales>(
      nb, act, act_row_bytes, expanded, num_tokens, [&](int64_t t0, auto n, const auto& tok) {
        q8_0_tokens<n>(nb, blocks, tok, out + t0 * out_stride, out_stride, row_lanes(num_rows));
      });
}

}  // namespace pagedchat::quant_avx512
#endif
