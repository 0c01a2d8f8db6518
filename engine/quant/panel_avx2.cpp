// The AVX2 panel kernel (panel.h): 16 rows x 1-2 tokens per pass.
//
// Per block and token, 16 byte-pair multiplies (vpmaddubsw) of the panel's nibbles against an
// activation pair broadcast to all lanes give the 16 rows' products in 16-bit lanes; 8 of them
// are summed in 16 bits (at most 8 * 2 * 15 * 128 = 30720, no overflow) before widening, so
// there is no per-row reduction at all. The float math per lane is panel.h's, in its order,
// so every lane equals the scalar reference bit for bit whatever T is.

#include <algorithm>

#include "engine/quant/panel_blocks.h"
#include "engine/quant/simd_avx2.h"

#if defined(PAGEDCHAT_QUANT_AVX2)
namespace pagedchat::quant_avx2 {
namespace {

constexpr int kRows = 16;  // panel.h's kPanelRows

// The activation pair (k, k+1) of a Q8_1 block in all 16 lanes of 16 bits.
static inline __m256i pair_broadcast(const block_q8_1& y, int k) {
  return _mm256_set1_epi16(static_cast<short>(load_u16(y.qs + k)));
}

template <int T>
void panel_tokens(int64_t nb, const panel_q4_1* blocks, const block_q8_1* const* y, float (*out)[kRows]) {
  __m256 acc[T][2], mins[T][2];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = mins[t][0] = mins[t][1] = _mm256_setzero_ps();
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  for (int64_t i = 0; i < nb; ++i) {
    const panel_q4_1& b = blocks[i];
    __m256i sum_lo[T], sum_hi[T];  // int32 sums of rows 0-7 and 8-15
#pragma GCC unroll 2
    for (int half = 0; half < 2; ++half) {
      __m256i s16[T];
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) s16[t] = _mm256_setzero_si256();
#pragma GCC unroll 4
      for (int j = 4 * half; j < 4 * half + 4; ++j) {
        const __m256i packed = load_256(b.q[j]);
        const __m256i first = _mm256_and_si256(packed, low4);
        const __m256i second = _mm256_and_si256(_mm256_srli_epi16(packed, 4), low4);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) {
          s16[t] = _mm256_add_epi16(s16[t], _mm256_maddubs_epi16(first, pair_broadcast(y[t][i], 4 * j)));
          s16[t] = _mm256_add_epi16(s16[t], _mm256_maddubs_epi16(second, pair_broadcast(y[t][i], 4 * j + 2)));
        }
      }
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const __m256i lo = _mm256_cvtepi16_epi32(_mm256_castsi256_si128(s16[t]));
        const __m256i hi = _mm256_cvtepi16_epi32(_mm256_extracti128_si256(s16[t], 1));
        sum_lo[t] = half == 0 ? lo : _mm256_add_epi32(sum_lo[t], lo);
        sum_hi[t] = half == 0 ? hi : _mm256_add_epi32(sum_hi[t], hi);
      }
    }
    const __m256 d_lo = _mm256_cvtph_ps(load_128(b.d)), d_hi = _mm256_cvtph_ps(load_128(b.d + 8));
    const __m256 m_lo = _mm256_cvtph_ps(load_128(b.m)), m_hi = _mm256_cvtph_ps(load_128(b.m + 8));
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const __m256 d_a = _mm256_set1_ps(half_at(&y[t][i].d));
      const __m256 s_a = _mm256_set1_ps(half_at(&y[t][i].s));
      acc[t][0] = _mm256_fmadd_ps(_mm256_mul_ps(d_lo, d_a), _mm256_cvtepi32_ps(sum_lo[t]), acc[t][0]);
      acc[t][1] = _mm256_fmadd_ps(_mm256_mul_ps(d_hi, d_a), _mm256_cvtepi32_ps(sum_hi[t]), acc[t][1]);
      mins[t][0] = _mm256_fmadd_ps(m_lo, s_a, mins[t][0]);
      mins[t][1] = _mm256_fmadd_ps(m_hi, s_a, mins[t][1]);
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) {
    _mm256_storeu_ps(out[t], _mm256_add_ps(acc[t][0], mins[t][0]));
    _mm256_storeu_ps(out[t] + 8, _mm256_add_ps(acc[t][1], mins[t][1]));
  }
}

}  // namespace

void panel_dot_q4_1(int64_t cols, const void* packed, int64_t panel, int64_t num_rows, const void* act,
                    size_t act_row_bytes, int64_t num_tokens, float* out, int64_t out_stride) {
  const int64_t nb = cols / kQK;
  const auto* blocks = static_cast<const panel_q4_1*>(packed) + panel * nb;
  const auto* a = static_cast<const uint8_t*>(act);
  constexpr int kTokensPerPass = 2;
  float result[kTokensPerPass][kRows];
  for (int64_t t0 = 0; t0 < num_tokens; t0 += kTokensPerPass) {
    const int n = static_cast<int>(std::min<int64_t>(kTokensPerPass, num_tokens - t0));
    const block_q8_1* y[kTokensPerPass];
    for (int t = 0; t < n; ++t) y[t] = reinterpret_cast<const block_q8_1*>(a + (t0 + t) * act_row_bytes);
    if (n == 2) {
      panel_tokens<2>(nb, blocks, y, result);
    } else {
      panel_tokens<1>(nb, blocks, y, result);
    }
    for (int t = 0; t < n; ++t) std::copy_n(result[t], num_rows, out + (t0 + t) * out_stride);
  }
}

}  // namespace pagedchat::quant_avx2
#endif
