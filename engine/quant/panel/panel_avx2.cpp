// The AVX2 panel kernels (panel.h): 16 rows x up to 8 (Q4_1) or 4 (Q8_0) tokens per pass.
//
// Q4_1: per block, row group (8 rows) and token, 8 byte-pair multiplies (vpmaddubsw) of the
// panel's nibbles against activation quads (4 quants in a row per 32-bit lane) give the 8 rows'
// products in 16-bit lanes, two per row; they are summed in 16 bits
// (at most 8 * 2 * 15 * 128 = 30720, no overflow) and one vpmaddwd adds each row's two lanes
// into 32 bits, so there is no per-row reduction at all. The nibble unpacking is shared by
// all the tokens of a pass. Q8_0: 4 elements per row and lane, widened to 32 bits after every
// multiply. The float math per lane is panel.h's, in its order, so every lane equals the
// scalar reference bit for bit whatever the number of tokens.

#include <algorithm>

#include "engine/quant/panel/panel_blocks.h"
#include "engine/quant/simd_avx2.h"

#if defined(PAGEDCHAT_QUANT_AVX2)
namespace pagedchat::quant_avx2 {
namespace {

constexpr int kRows = 16;  // panel.h's kPanelRows

// Where a kernel writes its 16 results per token: straight into the matmul's output for a
// whole panel, into a scratch for a partial one.
struct Out {
  float* p;
  int64_t stride;
  float* row(int t) const { return p + t * stride; }
};

// Where the broadcast Q8_0 activation quads come from: built by a broadcast instruction from the
// compact row, or read from an expanded copy (panel.h) as a plain load.
struct Compact {
  // The activation quad (k .. k+3) of a Q8_0 block in all 8 lanes of 32 bits.
  static __m256i quad(const block_q8_0* y, const uint8_t*, int64_t i, int k) {
    return _mm256_set1_epi32(static_cast<int>(load_u32(y[i].qs + k)));
  }
};
struct Expanded {
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

// Q4_1 activations for one token, from the compact Q8_1 row or from its expanded copy, whose
// quads the multiply takes as its memory operand (one vector instruction less per multiply)
// and whose scales are floats already.
struct CompactQ8_1 {
  const block_q8_1* y;
  // Quants 4 v .. 4 v + 3 of block i in all 8 lanes of 32 bits.
  __m256i quad(int64_t i, int v) const {
    return _mm256_set1_epi32(static_cast<int>(load_u32(y[i].qs + 4 * v)));
  }
  float d(int64_t i) const { return half_at(&y[i].d); }
  float s(int64_t i) const { return half_at(&y[i].s); }
};
struct ExpandedQ8_1 {
  const uint8_t* e;
  size_t scales_at;  // expanded_q4_1_scales_at(nb): d, s per block as floats
  __m256i quad(int64_t i, int v) const { return load_256(e + i * kExpandedQ4_1Block + v * 32); }
  float d(int64_t i) const { return load_f32(e + scales_at + 8 * i); }
  float s(int64_t i) const { return load_f32(e + scales_at + 8 * i + 4); }
};

// The Q4_1 minimum terms of T tokens (panel.h's `min`), in their own pass over the blocks so
// that the main loop keeps its integer sums in registers; 4 tokens at a time.
template <typename Source, int T>
void q4_1_mins(int64_t nb, const panel_q4_1* blocks, const Source* src, __m256 (*mins)[2]) {
  if constexpr (T > 4) {
    q4_1_mins<Source, 4>(nb, blocks, src, mins);
    q4_1_mins<Source, T - 4>(nb, blocks, src + 4, mins + 4);
  } else {
    __m256 lo[T], hi[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) lo[t] = hi[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
      const __m256 m_lo = _mm256_cvtph_ps(load_128(blocks[i].m)), m_hi = _mm256_cvtph_ps(load_128(blocks[i].m + 8));
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const __m256 s_a = _mm256_set1_ps(src[t].s(i));
        lo[t] = _mm256_fmadd_ps(m_lo, s_a, lo[t]);
        hi[t] = _mm256_fmadd_ps(m_hi, s_a, hi[t]);
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      mins[t][0] = lo[t];
      mins[t][1] = hi[t];
    }
  }
}

// Q4_1, T tokens per pass over the panel: per block and row group (8 rows), each of the 4
// packed vectors gives two nibble vectors (elements 4 j .. 4 j + 3 and 16 + 4 j .. 16 + 4 j + 3
// of each row), and every token multiplies them with its quads,
// summing in 16 bits (8 products of at most 2 * 15 * 128 per lane: no overflow); one vpmaddwd
// then adds each row's two halves into its 32-bit lane. The unpacking is shared by T tokens.
template <typename Source, int T>
void q4_1_tokens(int64_t nb, const panel_q4_1* blocks, const Source* src, Out out) {
  __m256 acc[T][2];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  const __m256i low4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
  for (int64_t i = 0; i < nb; ++i) {
    const panel_q4_1& b = blocks[i];
    prefetch_ahead(blocks + i);
#pragma GCC unroll 2
    for (int g = 0; g < 2; ++g) {
      __m256i s16[T];
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        const __m256i packed = load_256(b.q[j] + 32 * g);
        const __m256i first = _mm256_and_si256(packed, low4);
        const __m256i second = _mm256_and_si256(_mm256_srli_epi16(packed, 4), low4);
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
          const __m256i both = _mm256_add_epi16(_mm256_maddubs_epi16(first, src[t].quad(i, j)),
                                                _mm256_maddubs_epi16(second, src[t].quad(i, 4 + j)));
          s16[t] = j == 0 ? both : _mm256_add_epi16(s16[t], both);
          keep_in_register(s16[t]);
        }
      }
      const __m256 d_w = _mm256_cvtph_ps(load_128(b.d + 8 * g));
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const __m256 sum = _mm256_cvtepi32_ps(_mm256_madd_epi16(s16[t], ones));
        acc[t][g] = _mm256_fmadd_ps(_mm256_mul_ps(d_w, _mm256_set1_ps(src[t].d(i))), sum, acc[t][g]);
      }
    }
  }
  __m256 mins[T][2];
  q4_1_mins<Source, T>(nb, blocks, src, mins);
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
    _mm256_storeu_ps(out.row(t), _mm256_add_ps(acc[t][0], mins[t][0]));
    _mm256_storeu_ps(out.row(t) + 8, _mm256_add_ps(acc[t][1], mins[t][1]));
  }
}

// Most tokens per pass of the Q4_1 kernel: 8 T 16-bit sums, the nibbles and the mask fill the
// 16 vector registers (4 was as fast in a micro-benchmark, 2 was slower).
constexpr int kQ4_1MaxTokens = 8;

template <typename Source>
void q4_1_pass(int n, int64_t nb, const panel_q4_1* blocks, const Source* src, Out out) {
  switch (n) {
    case 8: return q4_1_tokens<Source, 8>(nb, blocks, src, out);
    case 4: return q4_1_tokens<Source, 4>(nb, blocks, src, out);
    case 2: return q4_1_tokens<Source, 2>(nb, blocks, src, out);
    default: return q4_1_tokens<Source, 1>(nb, blocks, src, out);
  }
}

// Runs the Q4_1 kernel over the tokens, 8, 4, 2 or 1 at a time.
void q4_1_panel(int64_t cols, const void* packed, int64_t panel, int64_t num_rows, const void* act,
                size_t act_row_bytes, const void* expanded, size_t expanded_row_bytes, int64_t num_tokens, float* out,
                int64_t out_stride) {
  const int64_t nb = cols / kQK;
  const auto* blocks = static_cast<const panel_q4_1*>(packed) + panel * nb;
  const auto* a = static_cast<const uint8_t*>(act);
  const auto* x = static_cast<const uint8_t*>(expanded);
  float partial[kQ4_1MaxTokens * kRows];
  for (int64_t t0 = 0; t0 < num_tokens;) {
    const int64_t left = num_tokens - t0;
    const int n = left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
    const Out result = num_rows == kRows ? Out{out + t0 * out_stride, out_stride} : Out{partial, kRows};
    if (x) {
      ExpandedQ8_1 src[kQ4_1MaxTokens];
      for (int t = 0; t < n; ++t) src[t] = {x + (t0 + t) * expanded_row_bytes, expanded_q4_1_scales_at(nb)};
      q4_1_pass(n, nb, blocks, src, result);
    } else {
      CompactQ8_1 src[kQ4_1MaxTokens];
      for (int t = 0; t < n; ++t) src[t] = {reinterpret_cast<const block_q8_1*>(a + (t0 + t) * act_row_bytes)};
      q4_1_pass(n, nb, blocks, src, result);
    }
    if (num_rows < kRows)
      for (int t = 0; t < n; ++t) std::copy_n(partial + t * kRows, num_rows, out + (t0 + t) * out_stride);
    t0 += n;
  }
}

template <typename Source, int T>
void q8_0_tokens(int64_t nb, const panel_q8_0* blocks, const block_q8_0* const* y, const uint8_t* const* e,
                 Out out) {
  __m256 acc[T][2];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t i = 0; i < nb; ++i) {
    const panel_q8_0& b = blocks[i];
    prefetch_ahead(blocks + i);
#pragma GCC unroll 2
    for (int g = 0; g < 2; ++g) {
      __m256i sum[T];  // int32 sums of rows 8 g .. 8 g + 7
#pragma GCC unroll 8
      for (int c = 0; c < 8; ++c) {
        const __m256i w = load_256(b.q[c] + 32 * g);
        const __m256i w_abs = _mm256_sign_epi8(w, w);  // -128 stays 128 as unsigned
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
          const __m256i quad = Source::quad(y[t], e[t], i, 4 * c);
          const __m256i pairs = _mm256_madd_epi16(_mm256_maddubs_epi16(w_abs, _mm256_sign_epi8(quad, w)), ones);
          sum[t] = c == 0 ? pairs : _mm256_add_epi32(sum[t], pairs);
          keep_in_register(sum[t]);
        }
      }
      const __m256 d_w = _mm256_cvtph_ps(load_128(b.d + 8 * g));
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const __m256 d_a = _mm256_set1_ps(half_at(&y[t][i].d));
        acc[t][g] = _mm256_fmadd_ps(_mm256_mul_ps(d_w, d_a), _mm256_cvtepi32_ps(sum[t]), acc[t][g]);
      }
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
    _mm256_storeu_ps(out.row(t), acc[t][0]);
    _mm256_storeu_ps(out.row(t) + 8, acc[t][1]);
  }
}

// Most tokens per pass of the Q8_0 kernel (8 spilled and was no faster): over_four_token_passes.
constexpr int kQ8_0MaxTokens = 4;

// Runs Kernel over the tokens, 4, 2 or 1 at a time.
template <typename Panel, typename Act, template <typename, int> class Kernel>
void over_tokens(int64_t cols, const void* packed, int64_t panel, int64_t num_rows, const void* act,
                 size_t act_row_bytes, const void* expanded, size_t expanded_row_bytes, int64_t num_tokens,
                 float* out, int64_t out_stride) {
  const int64_t nb = cols / kQK;
  const auto* blocks = static_cast<const Panel*>(packed) + panel * nb;
  const auto* a = static_cast<const uint8_t*>(act);
  const auto* x = static_cast<const uint8_t*>(expanded);
  over_four_token_passes(num_tokens, num_rows, out, out_stride, [&](int64_t t0, auto n, float* o, int64_t stride) {
    const Act* y[kQ8_0MaxTokens];
    const uint8_t* e[kQ8_0MaxTokens] = {};
    for (int t = 0; t < n; ++t) {
      y[t] = reinterpret_cast<const Act*>(a + (t0 + t) * act_row_bytes);
      if (x) e[t] = x + (t0 + t) * expanded_row_bytes;
    }
    if (x) Kernel<Expanded, n>::run(nb, blocks, y, e, Out{o, stride});
    else Kernel<Compact, n>::run(nb, blocks, y, e, Out{o, stride});
  });
}

template <typename Source, int T>
struct Q8_0Kernel {
  static void run(int64_t nb, const panel_q8_0* b, const block_q8_0* const* y, const uint8_t* const* e, Out o) {
    q8_0_tokens<Source, T>(nb, b, y, e, o);
  }
};

}  // namespace

void expand_for_panels(GgmlType weight_type, const void* act_row, int64_t nb, void* dst) {
  // Both activation formats start a block with its quants after 2 (Q8_0) or 4 (Q8_1) bytes.
  const bool q8_1 = weight_type == GgmlType::Q4_1;
  const size_t block_bytes = q8_1 ? sizeof(block_q8_1) : sizeof(block_q8_0);
  const size_t quants_at = q8_1 ? offsetof(block_q8_1, qs) : offsetof(block_q8_0, qs);
  const auto* in = static_cast<const uint8_t*>(act_row);
  auto* out = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* qs = in + i * block_bytes + quants_at;
    for (int v = 0; v < 8; ++v) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i * kExpandedQ4_1Block + v * 32),
                          _mm256_set1_epi32(static_cast<int>(load_u32(qs + 4 * v))));
    }
  }
  if (q8_1) {
    const auto* y = static_cast<const block_q8_1*>(act_row);
    uint8_t* scales = out + expanded_q4_1_scales_at(nb);
    for (int64_t i = 0; i < nb; ++i) {
      const float ds[2] = {half_at(&y[i].d), half_at(&y[i].s)};
      std::memcpy(scales + 8 * i, ds, sizeof ds);
    }
  }
}

void panel_dot(GgmlType type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows, const void* act,
               size_t act_row_bytes, const void* expanded, size_t expanded_row_bytes, int64_t num_tokens, float* out,
               int64_t out_stride) {
  if (type == GgmlType::Q4_1) {
    return q4_1_panel(cols, packed, panel, num_rows, act, act_row_bytes, expanded, expanded_row_bytes, num_tokens, out,
                      out_stride);
  }
  over_tokens<panel_q8_0, block_q8_0, Q8_0Kernel>(cols, packed, panel, num_rows, act, act_row_bytes, expanded,
                                                  expanded_row_bytes, num_tokens, out, out_stride);
}

}  // namespace pagedchat::quant_avx2
#endif
