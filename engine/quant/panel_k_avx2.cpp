// The AVX2 K-quant panel kernels (panel_k.h): 16 rows, as two groups of 8 rows in 32-bit
// lanes, x up to 4 tokens per pass, against compact Q8_K activation rows.
//
// Q4_K: per sub-block (32 elements) and token, 8 byte-pair multiplies (vpmaddubsw) of the
// unpacked nibbles against broadcast activation quads are summed in 16 bits (at most
// 8 * 2 * 15 * 127 = 30480: no overflow), and one vpmaddwd against the rows' scales, each
// repeated in both 16-bit halves of its lane, gives scale * (q . q_a) in 32 bits. The min terms
// are 4 vpmaddwd of the rows' min pairs against the activation's sub-block sums per super-block.
// Q5_K: the same with each quant's fifth bit merged in, and 16-bit sums of 4 multiplies.
// Q6_K: per group of 16 and token, 2 multiplies summed in 16 bits (at most 2 * 2 * 63 * 127 =
// 32004) twice, each multiplied by the scale into 32 bits, and the -32 of the format as
// scale * (-16 * sum, -16 * sum) (at most 16 * 2032 = 32512 in 16 bits). The integer sums are
// exact, and the float steps are panel_k.h's, in its order: every lane equals the reference.

#include <algorithm>
#include <type_traits>

#include "engine/quant/panel_blocks.h"
#include "engine/quant/simd_avx2.h"

#if defined(PAGEDCHAT_QUANT_AVX2)
namespace pagedchat::quant_avx2 {
namespace {

constexpr int kMaxTokens = 4;

// Asks for part `part` of `parts` of the block kPrefetchBlocks ahead, spread over the block's
// loop: a decode step streams every weight once from memory, and two threads taking panels in
// turn break the stream the hardware prefetcher would follow.
constexpr int kPrefetchBlocks = 2;
template <typename Block>
static inline void prefetch_part(const Block* at, int part, int parts) {
  constexpr size_t kLines = (sizeof(Block) + 63) / 64;
  const char* p = reinterpret_cast<const char*>(at + kPrefetchBlocks);
  const size_t first = kLines * part / parts, last = kLines * (part + 1) / parts;
  for (size_t l = first; l < last; ++l) _mm_prefetch(p + 64 * l, _MM_HINT_T0);
}

static inline __m256i quad(const int8_t* q) { return _mm256_set1_epi32(static_cast<int>(load_u32(q))); }

// 8 unsigned bytes as 32-bit lanes, each value in both of its 16-bit halves (vpmaddwd's operand).
static inline __m256i u8_pairs(const uint8_t* p) {
  const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  return _mm256_or_si256(v, _mm256_slli_epi32(v, 16));
}
// The same for 8 signed bytes.
static inline __m256i s8_pairs(const int8_t* p) {
  const __m256i v = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  return _mm256_blend_epi16(v, _mm256_slli_epi32(v, 16), 0xAA);
}

static inline void keep_in_register(__m256i& v) { asm("" : "+x"(v)); }

// Bit s of each byte of v moved to bit 4 (a Q5_K quant's fifth bit, as 16), the rest cleared.
static inline __m256i fifth_bits(__m256i v, int s) {
  const __m256i bit4 = _mm256_set1_epi8(0x10);
  if (s < 4) return _mm256_and_si256(_mm256_slli_epi16(v, 4 - s), bit4);
  return _mm256_and_si256(_mm256_srli_epi16(v, s - 4), bit4);
}

// Q4_K and Q5_K (Panel). A Q5_K quant is up to 31, so its 16-bit sums take 4 words at a time
// (at most 4 * 2 * 31 * 127 = 31496) and each half is multiplied by the scale apart.
template <typename Panel, int T>
void q4_K_tokens(int64_t nb, const Panel* blocks, const block_q8_K* const* y, float* out, int64_t out_stride) {
  constexpr bool kFive = std::is_same_v<Panel, panel_q5_K>;
  constexpr int kWordsPerSum = kFive ? 4 : 8;
  __m256 acc[T][2], mn[T][2];
  for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = mn[t][0] = mn[t][1] = _mm256_setzero_ps();
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  for (int64_t i = 0; i < nb; ++i) {
    const Panel& b = blocks[i];
    // Each token's sub-block sums of quants in pairs (2 c, 2 c + 1), for the min terms.
    __m256i bsum_pairs[T][4];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const int16_t* bs = y[t][i].bsums;
      for (int c = 0; c < 4; ++c) {
        const int lo = bs[4 * c] + bs[4 * c + 1], hi = bs[4 * c + 2] + bs[4 * c + 3];
        bsum_pairs[t][c] = _mm256_set1_epi32(static_cast<int>((static_cast<uint32_t>(lo) & 0xffff) |
                                                              static_cast<uint32_t>(hi) << 16));
      }
    }
#pragma GCC unroll 2
    for (int g = 0; g < 2; ++g) {
      __m256i sumi[T];
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) sumi[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int s = 0; s < 8; ++s) {
        prefetch_part(blocks + i, 8 * g + s, 16);
        const int c = s / 2;
        const __m256i scale = u8_pairs(b.scales[s] + 8 * g);
        __m256i s16[T];
#pragma GCC unroll 8
        for (int w = 0; w < 8; ++w) {
          const __m256i packed = load_256(b.q[c][w] + 32 * g);
          __m256i q = _mm256_and_si256(s % 2 == 0 ? packed : _mm256_srli_epi16(packed, 4), low4);
          if constexpr (kFive) q = _mm256_or_si256(q, fifth_bits(load_256(b.qh[w] + 32 * g), s));
#pragma GCC unroll 4
          for (int t = 0; t < T; ++t) {
            const __m256i m = _mm256_maddubs_epi16(q, quad(y[t][i].qs + 32 * s + 4 * w));
            s16[t] = w % kWordsPerSum == 0 ? m : _mm256_add_epi16(s16[t], m);
            keep_in_register(s16[t]);
            if (w % kWordsPerSum == kWordsPerSum - 1) sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(s16[t], scale));
          }
        }
      }
      const __m256 d_w = _mm256_cvtph_ps(load_128(b.d + 8 * g)), dmin_w = _mm256_cvtph_ps(load_128(b.dmin + 8 * g));
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        __m256i summ = _mm256_setzero_si256();
        for (int c = 0; c < 4; ++c) {
          const __m256i mins = _mm256_cvtepu8_epi16(load_128(b.mins[c] + 16 * g));
          summ = _mm256_add_epi32(summ, _mm256_madd_epi16(mins, bsum_pairs[t][c]));
        }
        const __m256 d_a = _mm256_set1_ps(y[t][i].d);
        acc[t][g] = _mm256_fmadd_ps(_mm256_mul_ps(d_w, d_a), _mm256_cvtepi32_ps(sumi[t]), acc[t][g]);
        mn[t][g] = _mm256_fmadd_ps(_mm256_mul_ps(dmin_w, d_a), _mm256_cvtepi32_ps(summ), mn[t][g]);
      }
    }
  }
  for (int t = 0; t < T; ++t) {
    _mm256_storeu_ps(out + t * out_stride, _mm256_sub_ps(acc[t][0], mn[t][0]));
    _mm256_storeu_ps(out + t * out_stride + 8, _mm256_sub_ps(acc[t][1], mn[t][1]));
  }
}

template <int T>
void q6_K_tokens(int64_t nb, const panel_q6_K* blocks, const block_q8_K* const* y, float* out, int64_t out_stride) {
  __m256 acc[T][2];
  for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  const __m256i low4 = _mm256_set1_epi8(0x0f), top2 = _mm256_set1_epi8(0x30);
  for (int64_t i = 0; i < nb; ++i) {
    const panel_q6_K& b = blocks[i];
#pragma GCC unroll 2
    for (int g = 0; g < 2; ++g) {
      __m256i sumi[T];
      for (int t = 0; t < T; ++t) sumi[t] = _mm256_setzero_si256();
      for (int grp = 0; grp < 16; ++grp) {
        prefetch_part(blocks + i, 16 * g + grp, 32);
        const __m256i ql0 = load_256(b.ql[grp][0] + 32 * g), ql1 = load_256(b.ql[grp][1] + 32 * g);
        const __m256i qh = load_256(b.qh[grp] + 32 * g);
        const __m256i q0 = _mm256_or_si256(_mm256_and_si256(ql0, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), top2));
        const __m256i q1 = _mm256_or_si256(_mm256_and_si256(ql1, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), top2));
        const __m256i q2 =
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4), _mm256_and_si256(qh, top2));
        const __m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                                           _mm256_and_si256(_mm256_srli_epi16(qh, 2), top2));
        const __m256i scale = s8_pairs(b.scales[grp] + 8 * g);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) {
          const int8_t* a = y[t][i].qs + 16 * grp;
          const __m256i s01 = _mm256_add_epi16(_mm256_maddubs_epi16(q0, quad(a)), _mm256_maddubs_epi16(q1, quad(a + 4)));
          const __m256i s23 =
              _mm256_add_epi16(_mm256_maddubs_epi16(q2, quad(a + 8)), _mm256_maddubs_epi16(q3, quad(a + 12)));
          const __m256i offset = _mm256_set1_epi16(static_cast<int16_t>(-16 * y[t][i].bsums[grp]));
          const __m256i p = _mm256_add_epi32(_mm256_add_epi32(_mm256_madd_epi16(s01, scale), _mm256_madd_epi16(s23, scale)),
                                             _mm256_madd_epi16(offset, scale));
          sumi[t] = _mm256_add_epi32(sumi[t], p);
        }
      }
      const __m256 d_w = _mm256_cvtph_ps(load_128(b.d + 8 * g));
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const __m256 d_a = _mm256_set1_ps(y[t][i].d);
        acc[t][g] = _mm256_fmadd_ps(_mm256_mul_ps(d_w, d_a), _mm256_cvtepi32_ps(sumi[t]), acc[t][g]);
      }
    }
  }
  for (int t = 0; t < T; ++t) {
    _mm256_storeu_ps(out + t * out_stride, acc[t][0]);
    _mm256_storeu_ps(out + t * out_stride + 8, acc[t][1]);
  }
}

template <typename Panel, template <int> class Kernel>
void over_tokens(int64_t cols, const void* packed, int64_t panel, int64_t num_rows, const void* act,
                 size_t act_row_bytes, int64_t num_tokens, float* out, int64_t out_stride) {
  const int64_t nb = cols / kQKK;
  const auto* blocks = static_cast<const Panel*>(packed) + panel * nb;
  const auto* a = static_cast<const uint8_t*>(act);
  over_four_token_passes(num_tokens, num_rows, out, out_stride, [&](int64_t t0, auto n, float* o, int64_t stride) {
    const block_q8_K* y[kMaxTokens];
    for (int t = 0; t < n; ++t) y[t] = reinterpret_cast<const block_q8_K*>(a + (t0 + t) * act_row_bytes);
    Kernel<n>::run(nb, blocks, y, o, stride);
  });
}

template <int T>
struct Q4_KKernel {
  static void run(int64_t nb, const panel_q4_K* b, const block_q8_K* const* y, float* o, int64_t s) {
    q4_K_tokens<panel_q4_K, T>(nb, b, y, o, s);
  }
};
template <int T>
struct Q5_KKernel {
  static void run(int64_t nb, const panel_q5_K* b, const block_q8_K* const* y, float* o, int64_t s) {
    q4_K_tokens<panel_q5_K, T>(nb, b, y, o, s);
  }
};
template <int T>
struct Q6_KKernel {
  static void run(int64_t nb, const panel_q6_K* b, const block_q8_K* const* y, float* o, int64_t s) {
    q6_K_tokens<T>(nb, b, y, o, s);
  }
};

}  // namespace

void k_panel_dot(GgmlType type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows, const void* act,
                 size_t act_row_bytes, int64_t num_tokens, float* out, int64_t out_stride) {
  if (type == GgmlType::Q4_K) {
    return over_tokens<panel_q4_K, Q4_KKernel>(cols, packed, panel, num_rows, act, act_row_bytes, num_tokens, out,
                                               out_stride);
  }
  if (type == GgmlType::Q5_K) {
    return over_tokens<panel_q5_K, Q5_KKernel>(cols, packed, panel, num_rows, act, act_row_bytes, num_tokens, out,
                                               out_stride);
  }
  over_tokens<panel_q6_K, Q6_KKernel>(cols, packed, panel, num_rows, act, act_row_bytes, num_tokens, out, out_stride);
}

}  // namespace pagedchat::quant_avx2
#endif
