// The AVX-512 F16/BF16 panel kernel (panel_float.h): one vector holds a panel column's 16 rows
// as floats, up to 8 tokens per pass, each token two fma chains (even and odd columns) against
// its broadcast activation, so every lane computes panel_float.h's sums in its order.

#include "engine/quant/quant_avx512.h"

#include "engine/quant/panel/panel_blocks.h"
#include "engine/quant/simd_avx512.h"

#if defined(PAGEDCHAT_QUANT_AVX512)

namespace pagedchat::quant_avx512 {
namespace {

constexpr int kPrefetchBlocks = 2;

// Column k of a panel block as 16 floats.
template <bool kBf16>
static inline __m512 column(const panel_f16& b, int k) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.w[k]));
  if constexpr (kBf16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  return _mm512_cvtph_ps(h);
}

template <bool kBf16, int T>
void float_tokens(int64_t nb, const panel_f16* blocks, const float* const* x, float* out, int64_t out_stride,
                  __mmask16 rows) {
  __m512 acc[T][2];
  for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = _mm512_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const panel_f16& b = blocks[i];
    const char* ahead = reinterpret_cast<const char*>(blocks + i + kPrefetchBlocks);
#pragma GCC unroll 32
    for (int k = 0; k < kQK; ++k) {
      if (k % 2 == 0) _mm_prefetch(ahead + 32 * k, _MM_HINT_T0);  // a line every two columns
      const __m512 w = column<kBf16>(b, k);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) acc[t][k % 2] = _mm512_fmadd_ps(w, _mm512_set1_ps(x[t][kQK * i + k]), acc[t][k % 2]);
    }
  }
  for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(out + t * out_stride, rows, _mm512_add_ps(acc[t][0], acc[t][1]));
}

template <bool kBf16>
void over_tokens(int64_t cols, const void* packed, int64_t panel, int64_t num_rows, const void* act,
                 size_t act_row_bytes, int64_t num_tokens, float* out, int64_t out_stride) {
  const int64_t nb = cols / kQK;
  const auto* blocks = static_cast<const panel_f16*>(packed) + panel * nb;
  const auto* a = static_cast<const uint8_t*>(act);
  over_token_passes(num_tokens, [&](int64_t t0, auto n) {
    const float* x[kMaxPassTokens];
    for (int t = 0; t < n; ++t) x[t] = reinterpret_cast<const float*>(a + (t0 + t) * act_row_bytes);
    float_tokens<kBf16, n>(nb, blocks, x, out + t0 * out_stride, out_stride, row_lanes(num_rows));
  });
}

}  // namespace

void float_panel_dot(GgmlType type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows, const void* act,
                     size_t act_row_bytes, int64_t num_tokens, float* out, int64_t out_stride) {
  if (type == GgmlType::BF16) {
    return over_tokens<true>(cols, packed, panel, num_rows, act, act_row_bytes, num_tokens, out, out_stride);
  }
  over_tokens<false>(cols, packed, panel, num_rows, act, act_row_bytes, num_tokens, out, out_stride);
}

}  // namespace pagedchat::quant_avx512
#endif
