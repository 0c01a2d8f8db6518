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
//
// A call with more tokens than two passes (a prefill chunk, a big batch) first unpacks the
// panel's quants into bytes, once (panel_blocks.h's unpacked quads): every pass then loads them
// instead of unpacking them again for its 4 tokens.

#include <algorithm>
#include <type_traits>
#include <vector>

#include "engine/quant/panel/panel_blocks.h"
#include "engine/quant/simd_avx2.h"

#if defined(PAGEDCHAT_QUANT_AVX2)
namespace pagedchat::quant_avx2 {
namespace {

constexpr int kMaxTokens = 4;

// How many blocks ahead the kernels ask for (simd_avx2.h's prefetch_part).
constexpr int kPrefetchBlocks = 2;

// Bit s of each byte of v moved to bit 4 (a Q5_K quant's fifth bit, as 16), the rest cleared.
static inline __m256i fifth_bits(__m256i v, int s) {
  const __m256i bit4 = _mm256_set1_epi8(0x10);
  if (s < 4) return _mm256_and_si256(_mm256_slli_epi16(v, 4 - s), bit4);
  return _mm256_and_si256(_mm256_srli_epi16(v, s - 4), bit4);
}

// Q4_K's and Q5_K's quants of sub-block s, word w (elements 32 s + 4 w ..), of row group g.
template <typename Panel>
static inline __m256i k4_quads(const Panel& b, int s, int w, int g) {
  const __m256i packed = load_256(b.q[s / 2][w] + 32 * g);
  __m256i q = _mm256_and_si256(s % 2 == 0 ? packed : _mm256_srli_epi16(packed, 4), _mm256_set1_epi8(0x0f));
  if constexpr (std::is_same_v<Panel, panel_q5_K>) q = _mm256_or_si256(q, fifth_bits(load_256(b.qh[w] + 32 * g), s));
  return q;
}
// Q6_K's quants of group grp, quad k (elements 16 grp + 4 k ..), of row group g, unsigned.
static inline __m256i q6_quads(const panel_q6_K& b, int grp, int k, int g) {
  const __m256i ql = load_256(b.ql[grp][k % 2] + 32 * g), qh = load_256(b.qh[grp] + 32 * g);
  const __m256i low = _mm256_and_si256(k < 2 ? ql : _mm256_srli_epi16(ql, 4), _mm256_set1_epi8(0x0f));
  // quad k's top 2 bits are bits 2 k and 2 k + 1 of qh: to bits 4 and 5
  const __m256i high = k == 0   ? _mm256_slli_epi16(qh, 4)
                       : k == 1 ? _mm256_slli_epi16(qh, 2)
                       : k == 2 ? qh
                                : _mm256_srli_epi16(qh, 2);
  return _mm256_or_si256(low, _mm256_and_si256(high, _mm256_set1_epi8(0x30)));
}
// Row group g's half of quad j of super-block i from an unpacked panel.
static inline __m256i unpacked_quads(const UnpackedQuads* u, int64_t i, int j, int g) {
  return load_256(u[i * kUnpackedQuadsPerBlock + j].q + 32 * g);
}
// The quants of a panel's nb super-blocks, unpacked into dst.
template <typename Panel>
void unpack_panel(const Panel* blocks, int64_t nb, UnpackedQuads* dst) {
  for (int64_t i = 0; i < nb; ++i) {
    prefetch_part<kPrefetchBlocks>(blocks + i, 0, 1);  // from memory in a big batch's decode step (as the passes do)
    UnpackedQuads* u = dst + i * kUnpackedQuadsPerBlock;
    for (int g = 0; g < 2; ++g) {
      if constexpr (std::is_same_v<Panel, panel_q6_K>) {
        for (int grp = 0; grp < 16; ++grp)
          for (int k = 0; k < 4; ++k) store_256(u[4 * grp + k].q + 32 * g, q6_quads(blocks[i], grp, k, g));
      } else {
        for (int s = 0; s < 8; ++s)
          for (int w = 0; w < 8; ++w) store_256(u[8 * s + w].q + 32 * g, k4_quads(blocks[i], s, w, g));
      }
    }
  }
}

// Q4_K and Q5_K (Panel), the quants unpacked here or, given `unpacked`, loaded from it. A Q5_K
// quant is up to 31, so its 16-bit sums take 4 words at a time (at most 4 * 2 * 31 * 127 =
// 31496) and each half is multiplied by the scale apart.
template <typename Panel, int T>
void q4_K_tokens(int64_t nb, const Panel* blocks, const UnpackedQuads* unpacked, const block_q8_K* const* y,
                 float* out, int64_t out_stride) {
  constexpr bool kFive = std::is_same_v<Panel, panel_q5_K>;
  constexpr int kWordsPerSum = kFive ? 4 : 8;
  __m256 acc[T][2], mn[T][2];
  for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = mn[t][0] = mn[t][1] = _mm256_setzero_ps();
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
        if (!unpacked) prefetch_part<kPrefetchBlocks>(blocks + i, 8 * g + s, 16);
        const __m256i scale = u8_pairs(b.scales[s] + 8 * g);
        __m256i s16[T];
#pragma GCC unroll 8
        for (int w = 0; w < 8; ++w) {
          const __m256i q = unpacked ? unpacked_quads(unpacked, i, 8 * s + w, g) : k4_quads(b, s, w, g);
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
void q6_K_tokens(int64_t nb, const panel_q6_K* blocks, const UnpackedQuads* unpacked, const block_q8_K* const* y,
                 float* out, int64_t out_stride) {
  __m256 acc[T][2];
  for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const panel_q6_K& b = blocks[i];
#pragma GCC unroll 2
    for (int g = 0; g < 2; ++g) {
      __m256i sumi[T];
      for (int t = 0; t < T; ++t) sumi[t] = _mm256_setzero_si256();
      for (int grp = 0; grp < 16; ++grp) {
        __m256i q0, q1, q2, q3;
        if (unpacked) {
          q0 = unpacked_quads(unpacked, i, 4 * grp, g), q1 = unpacked_quads(unpacked, i, 4 * grp + 1, g);
          q2 = unpacked_quads(unpacked, i, 4 * grp + 2, g), q3 = unpacked_quads(unpacked, i, 4 * grp + 3, g);
        } else {
          prefetch_part<kPrefetchBlocks>(blocks + i, 16 * g + grp, 32);
          q0 = q6_quads(b, grp, 0, g), q1 = q6_quads(b, grp, 1, g), q2 = q6_quads(b, grp, 2, g);
          q3 = q6_quads(b, grp, 3, g);
        }
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

// Tokens from which a call unpacks the quants first: three passes or more.
constexpr int64_t kUnpackMinTokens = 3 * kMaxTokens;

template <typename Panel, template <int> class Kernel>
void over_tokens(int64_t cols, const void* packed, int64_t panel, int64_t num_rows, const void* act,
                 size_t act_row_bytes, int64_t num_tokens, float* out, int64_t out_stride) {
  const int64_t nb = cols / kQKK;
  const auto* blocks = static_cast<const Panel*>(packed) + panel * nb;
  const auto* a = static_cast<const uint8_t*>(act);
  const UnpackedQuads* unpacked = nullptr;
  if (num_tokens >= kUnpackMinTokens) {
    thread_local std::vector<UnpackedQuads> buffer;
    buffer.resize(static_cast<size_t>(nb * kUnpackedQuadsPerBlock));
    unpack_panel(blocks, nb, buffer.data());
    unpacked = buffer.data();
  }
  over_four_token_passes(num_tokens, num_rows, out, out_stride, [&](int64_t t0, auto n, float* o, int64_t stride) {
    const block_q8_K* y[kMaxTokens];
    for (int t = 0; t < n; ++t) y[t] = reinterpret_cast<const block_q8_K*>(a + (t0 + t) * act_row_bytes);
    Kernel<n>::run(nb, blocks, unpacked, y, o, stride);
  });
}

template <int T>
struct Q4_KKernel {
  static void run(int64_t nb, const panel_q4_K* b, const UnpackedQuads* u, const block_q8_K* const* y, float* o,
                  int64_t s) {
    q4_K_tokens<panel_q4_K, T>(nb, b, u, y, o, s);
  }
};
template <int T>
struct Q5_KKernel {
  static void run(int64_t nb, const panel_q5_K* b, const UnpackedQuads* u, const block_q8_K* const* y, float* o,
                  int64_t s) {
    q4_K_tokens<panel_q5_K, T>(nb, b, u, y, o, s);
  }
};
template <int T>
struct Q6_KKernel {
  static void run(int64_t nb, const panel_q6_K* b, const UnpackedQuads* u, const block_q8_K* const* y, float* o,
                  int64_t s) {
    q6_K_tokens<T>(nb, b, u, y, o, s);
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
