// The AVX2 panel kernels (panel.h): 16 rows x 1-2 tokens per pass.
//
// Q4_1: per block and token, 16 byte-pair multiplies (vpmaddubsw) of the panel's nibbles
// against an activation pair broadcast to all lanes give the 16 rows' products in 16-bit lanes;
// 8 of them are summed in 16 bits (at most 8 * 2 * 15 * 128 = 30720, no overflow) before
// widening, so there is no per-row reduction at all. Q8_0: the same with 4 elements per row
// and lane, widened to 32 bits after every multiply. The float math per lane is panel.h's, in
// its order, so every lane equals the scalar reference bit for bit whatever T is.

#include <algorithm>

#include "engine/quant/panel_blocks.h"
#include "engine/quant/simd_avx2.h"

#if defined(PAGEDCHAT_QUANT_AVX2)
namespace pagedchat::quant_avx2 {
namespace {

constexpr int kRows = 16;  // panel.h's kPanelRows

// Where the broadcast activation pairs (Q4_1) or quads (Q8_0) come from: built by a broadcast
// instruction from the compact row, or read from an expanded copy (panel.h) as a plain load
// that the multiply takes as its memory operand: one vector instruction less per multiply.
struct Compact {
  // The activation pair (k, k+1) of a Q8_1 block in all 16 lanes of 16 bits.
  static __m256i pair(const block_q8_1* y, const uint8_t*, int64_t i, int k) {
    return _mm256_set1_epi16(static_cast<short>(load_u16(y[i].qs + k)));
  }
  // The activation quad (k .. k+3) of a Q8_0 block in all 8 lanes of 32 bits.
  static __m256i quad(const block_q8_0* y, const uint8_t*, int64_t i, int k) {
    return _mm256_set1_epi32(static_cast<int>(load_u32(y[i].qs + k)));
  }
};
struct Expanded {
  static __m256i pair(const block_q8_1*, const uint8_t* e, int64_t i, int k) {
    return load_256(e + (i * 16 + k / 2) * 32);
  }
  static __m256i quad(const block_q8_0*, const uint8_t* e, int64_t i, int k) {
    return load_256(e + (i * 8 + k / 4) * 32);
  }
};

// Asks for the block kPrefetchBlocks ahead (of this panel, or past its end: the next panel,
// which the next task of the matmul usually reads; a prefetch never faults). A decode step reads
// every weight once, from memory; the hardware prefetcher loses the stream when two threads
// take panels in turn.
constexpr int kPrefetchBlocks = 4;
template <typename Block>
static inline void prefetch_ahead(const Block* at) {
  const char* p = reinterpret_cast<const char*>(at + kPrefetchBlocks);
  for (size_t b = 0; b < sizeof(Block); b += 64) _mm_prefetch(p + b, _MM_HINT_T0);
}

template <typename Source, int T>
void q4_1_tokens(int64_t nb, const panel_q4_1* blocks, const block_q8_1* const* y, const uint8_t* const* e,
                 float (*out)[kRows]) {
  __m256 acc[T][2], mins[T][2];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = mins[t][0] = mins[t][1] = _mm256_setzero_ps();
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  for (int64_t i = 0; i < nb; ++i) {
    const panel_q4_1& b = blocks[i];
    prefetch_ahead(blocks + i);
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
          s16[t] = _mm256_add_epi16(s16[t], _mm256_maddubs_epi16(first, Source::pair(y[t], e[t], i, 4 * j)));
          s16[t] = _mm256_add_epi16(s16[t], _mm256_maddubs_epi16(second, Source::pair(y[t], e[t], i, 4 * j + 2)));
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

template <typename Source, int T>
void q8_0_tokens(int64_t nb, const panel_q8_0* blocks, const block_q8_0* const* y, const uint8_t* const* e,
                 float (*out)[kRows]) {
  __m256 acc[T][2];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t i = 0; i < nb; ++i) {
    const panel_q8_0& b = blocks[i];
    prefetch_ahead(blocks + i);
    __m256i sum[T][2];  // int32 sums of rows 0-7 and 8-15
#pragma GCC unroll 2
    for (int g = 0; g < 2; ++g) {
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) sum[t][g] = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int c = 0; c < 8; ++c) {
        const __m256i w = load_256(b.q[g][c]);
        const __m256i w_abs = _mm256_sign_epi8(w, w);  // -128 stays 128 as unsigned
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) {
          const __m256i quad = Source::quad(y[t], e[t], i, 4 * c);
          const __m256i pairs = _mm256_maddubs_epi16(w_abs, _mm256_sign_epi8(quad, w));
          sum[t][g] = _mm256_add_epi32(sum[t][g], _mm256_madd_epi16(pairs, ones));
        }
      }
    }
    const __m256 d_lo = _mm256_cvtph_ps(load_128(b.d)), d_hi = _mm256_cvtph_ps(load_128(b.d + 8));
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const __m256 d_a = _mm256_set1_ps(half_at(&y[t][i].d));
      acc[t][0] = _mm256_fmadd_ps(_mm256_mul_ps(d_lo, d_a), _mm256_cvtepi32_ps(sum[t][0]), acc[t][0]);
      acc[t][1] = _mm256_fmadd_ps(_mm256_mul_ps(d_hi, d_a), _mm256_cvtepi32_ps(sum[t][1]), acc[t][1]);
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) {
    _mm256_storeu_ps(out[t], acc[t][0]);
    _mm256_storeu_ps(out[t] + 8, acc[t][1]);
  }
}

// Runs Kernel over the tokens two at a time (one for an odd last token).
template <typename Panel, typename Act, template <typename, int> class Kernel>
void over_tokens(int64_t cols, const void* packed, int64_t panel, int64_t num_rows, const void* act,
                 size_t act_row_bytes, const void* expanded, size_t expanded_row_bytes, int64_t num_tokens,
                 float* out, int64_t out_stride) {
  const int64_t nb = cols / kQK;
  const auto* blocks = static_cast<const Panel*>(packed) + panel * nb;
  const auto* a = static_cast<const uint8_t*>(act);
  const auto* x = static_cast<const uint8_t*>(expanded);
  float result[2][kRows];
  for (int64_t t0 = 0; t0 < num_tokens; t0 += 2) {
    const int n = static_cast<int>(std::min<int64_t>(2, num_tokens - t0));
    const Act* y[2];
    const uint8_t* e[2] = {nullptr, nullptr};
    for (int t = 0; t < n; ++t) {
      y[t] = reinterpret_cast<const Act*>(a + (t0 + t) * act_row_bytes);
      if (x) e[t] = x + (t0 + t) * expanded_row_bytes;
    }
    if (x) {
      n == 2 ? Kernel<Expanded, 2>::run(nb, blocks, y, e, result) : Kernel<Expanded, 1>::run(nb, blocks, y, e, result);
    } else {
      n == 2 ? Kernel<Compact, 2>::run(nb, blocks, y, e, result) : Kernel<Compact, 1>::run(nb, blocks, y, e, result);
    }
    for (int t = 0; t < n; ++t) std::copy_n(result[t], num_rows, out + (t0 + t) * out_stride);
  }
}

template <typename Source, int T>
struct Q4_1Kernel {
  static void run(int64_t nb, const panel_q4_1* b, const block_q8_1* const* y, const uint8_t* const* e, float (*o)[kRows]) {
    q4_1_tokens<Source, T>(nb, b, y, e, o);
  }
};
template <typename Source, int T>
struct Q8_0Kernel {
  static void run(int64_t nb, const panel_q8_0* b, const block_q8_0* const* y, const uint8_t* const* e, float (*o)[kRows]) {
    q8_0_tokens<Source, T>(nb, b, y, e, o);
  }
};

}  // namespace

void panel_dot(GgmlType type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows, const void* act,
               size_t act_row_bytes, const void* expanded, size_t expanded_row_bytes, int64_t num_tokens, float* out,
               int64_t out_stride) {
  if (type == GgmlType::Q4_1) {
    return over_tokens<panel_q4_1, block_q8_1, Q4_1Kernel>(cols, packed, panel, num_rows, act, act_row_bytes, expanded,
                                                          expanded_row_bytes, num_tokens, out, out_stride);
  }
  over_tokens<panel_q8_0, block_q8_0, Q8_0Kernel>(cols, packed, panel, num_rows, act, act_row_bytes, expanded,
                                                  expanded_row_bytes, num_tokens, out, out_stride);
}

}  // namespace pagedchat::quant_avx2
#endif
