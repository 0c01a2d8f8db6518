// The AVX2 F16/BF16 panel kernel (panel_float.h): a panel column's 16 rows as two vectors of 8
// floats, up to 4 tokens per pass, each token two fma chains (even and odd columns) against its
// broadcast activation, so every lane computes panel_float.h's sums in its order.

#include <algorithm>

#include "engine/quant/panel/panel_blocks.h"
#include "engine/quant/simd_avx2.h"

#if defined(PAGEDCHAT_QUANT_AVX2)
namespace pagedchat::quant_avx2 {
namespace {

constexpr int kMaxTokens = 4;
constexpr int kPrefetchBlocks = 2;

// Rows 8 g .. 8 g + 7 of column k of a panel block as floats.
template <bool kBf16>
static inline __m256 column(const panel_f16& b, int k, int g) {
  const __m128i h = load_128(b.w[k] + 8 * g);
  if constexpr (kBf16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  return _mm256_cvtph_ps(h);
}

template <bool kBf16, int T>
void float_tokens(int64_t nb, const panel_f16* blocks, const float* const* x, float* out, int64_t out_stride) {
#pragma GCC unroll 2
  for (int g = 0; g < 2; ++g) {
    __m256 acc[T][2];
    for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
      const panel_f16& b = blocks[i];
      const char* ahead = reinterpret_cast<const char*>(blocks + i + kPrefetchBlocks);
#pragma GCC unroll 32
      for (int k = 0; k < kQK; ++k) {
        if (g == 0 && k % 2 == 0) _mm_prefetch(ahead + 32 * k, _MM_HINT_T0);
        const __m256 w = column<kBf16>(b, k, g);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t)
          acc[t][k % 2] = _mm256_fmadd_ps(w, _mm256_set1_ps(x[t][kQK * i + k]), acc[t][k % 2]);
      }
    }
    for (int t = 0; t < T; ++t) _mm256_storeu_ps(out + t * out_stride + 8 * g, _mm256_add_ps(acc[t][0], acc[t][1]));
  }
}

template <bool kBf16>
void over_tokens(int64_t cols, const void* packed, int64_t panel, int64_t num_rows, const void* act,
                 size_t act_row_bytes, int64_t num_tokens, float* out, int64_t out_stride) {
  const int64_t nb = cols / kQK;
  const auto* blocks = static_cast<const panel_f16*>(packed) + panel * nb;
  const auto* a = static_cast<const uint8_t*>(act);
  over_four_token_passes(num_tokens, num_rows, out, out_stride, [&](int64_t t0, auto n, float* o, int64_t stride) {
    const float* x[kMaxTokens];
    for (int t = 0; t < n; ++t) x[t] = reinterpret_cast<const float*>(a + (t0 + t) * act_row_bytes);
    float_tokens<kBf16, n>(nb, blocks, x, o, stride);
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

}  // namespace pagedchat::quant_avx2
#endif
