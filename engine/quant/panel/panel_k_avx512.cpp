// The AVX-512 VNNI K-quant panel kernels (panel_k.h): one vector holds a panel's 16 rows, up to
// 8 tokens per pass, against compact Q8_K activation rows.
//
// Q4_K: per sub-block (32 elements) and token, 8 four-way byte dots (vpdpbusd) of the unpacked
// nibbles against broadcast activation quads give each row's (q . q_a) in its own lane, and one
// 32-bit multiply by the rows' scales adds it to the super-block's sum; the min terms are 4
// 16-bit pair dots (vpdpwssd) of the rows' min pairs against the activation's sub-block sums, read
// in pairs from the expanded row (vnni_q8_K_min_sums).
// Q5_K: the same with each quant's fifth bit merged in.
// Q6_K: per group of 16, 4 byte dots of the unsigned quants and the multiply by the scale; the
// format's -32 as -32 x the sum over groups of scale x the activation's group sum, by 16-bit pair
// dots (vpdpwssd) once per super-block. Integer sums are exact and the
// float steps are panel_k.h's, in its order, so every lane equals the scalar reference.
//
// A call with more tokens than one pass (a prefill chunk, a big batch) first unpacks the
// panel's quants into bytes (unpack_panel, panel_blocks.h's unpacked quads), once: every pass
// then loads them instead of unpacking them again, which took a third of Q5_K's vector
// instructions (the fifth bits) and a sixth of Q6_K's. 16 bytes a column, read from L1 or L2.

#include "engine/quant/quant_avx512.h"

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "engine/quant/panel/panel_blocks.h"
#include "engine/quant/simd_avx512.h"

#if defined(PAGEDCHAT_QUANT_AVX512)

namespace pagedchat::quant_avx512 {
namespace {

constexpr int kPrefetchBlocks = 2;

static inline __m512i load_512(const void* p) { return _mm512_loadu_si512(p); }
// Bit s of each byte of v moved to bit 4 (a Q5_K quant's fifth bit, as 16), the rest cleared.
static inline __m512i fifth_bits(__m512i v, int s) {
  const __m512i bit4 = _mm512_set1_epi8(0x10);
  if (s < 4) return _mm512_and_si512(_mm512_slli_epi16(v, static_cast<unsigned>(4 - s)), bit4);
  return _mm512_and_si512(_mm512_srli_epi16(v, static_cast<unsigned>(s - 4)), bit4);
}

// Q4_K's and Q5_K's quants of sub-block s, word w (elements 32 s + 4 w ..).
template <typename Panel>
static inline __m512i k4_quads(const Panel& b, int s, int w) {
  const __m512i packed = load_512(b.q[s / 2][w]);
  __m512i q = _mm512_and_si512(s % 2 == 0 ? packed : _mm512_srli_epi16(packed, 4), _mm512_set1_epi8(0x0f));
  if constexpr (std::is_same_v<Panel, panel_q5_K>) q = _mm512_or_si512(q, fifth_bits(load_512(b.qh[w]), s));
  return q;
}
// Q6_K's quants of group g, quad k (elements 16 g + 4 k ..), unsigned (0..63).
static inline __m512i q6_quads(const panel_q6_K& b, int g, int k) {
  const __m512i ql = load_512(b.ql[g][k % 2]), qh = load_512(b.qh[g]);
  const __m512i low = _mm512_and_si512(k < 2 ? ql : _mm512_srli_epi16(ql, 4), _mm512_set1_epi8(0x0f));
  // quad k's top 2 bits are bits 2 k and 2 k + 1 of qh: to bits 4 and 5
  const __m512i high = k == 0   ? _mm512_slli_epi16(qh, 4)
                       : k == 1 ? _mm512_slli_epi16(qh, 2)
                       : k == 2 ? qh
                                : _mm512_srli_epi16(qh, 2);
  return _mm512_or_si512(low, _mm512_and_si512(high, _mm512_set1_epi8(0x30)));
}
// Quad j of super-block i from an unpacked panel.
static inline __m512i unpacked_quads(const UnpackedQuads* u, int64_t i, int j) {
  return _mm512_load_si512(u[i * kUnpackedQuadsPerBlock + j].q);
}

// The quants of a panel's nb super-blocks, unpacked into dst.
template <typename Panel>
void unpack_panel(const Panel* blocks, int64_t nb, UnpackedQuads* dst) {
  for (int64_t i = 0; i < nb; ++i) {
    // The step reads the panel from memory here, once: without asking ahead the unpacking
    // waited on it (a third of a 16-stream step, when those unpacked).
    prefetch_ahead<kPrefetchBlocks>(blocks + i);
    UnpackedQuads* u = dst + i * kUnpackedQuadsPerBlock;
    if constexpr (std::is_same_v<Panel, panel_q6_K>) {
      for (int g = 0; g < 16; ++g)
        for (int k = 0; k < 4; ++k) _mm512_store_si512(u[4 * g + k].q, q6_quads(blocks[i], g, k));
    } else {
      for (int s = 0; s < 8; ++s)
        for (int w = 0; w < 8; ++w) _mm512_store_si512(u[8 * s + w].q, k4_quads(blocks[i], s, w));
    }
  }
}

// Q4_K and Q5_K (Panel; Q5_K's quants get their fifth bit merged in before the dots), the quants
// unpacked here or, given `unpacked`, loaded from it.
template <typename Panel, int T>
void q4_K_tokens(int64_t nb, const Panel* blocks, const UnpackedQuads* unpacked, const block_q8_K* const* y,
                 const vnni_q8_K_min_sums* const* sums, float* out, int64_t out_stride, __mmask16 rows) {
  // Each sub-block sum is a chain of dependent dots; two chains halve its latency (measured
  // faster at 8 tokens a pass too).
  constexpr int kChains = 2;
  __m512 acc[T], mn[T];
  for (int t = 0; t < T; ++t) acc[t] = mn[t] = _mm512_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const Panel& b = blocks[i];
    __m512i sumi[T];
#pragma GCC unroll 8
    for (int s = 0; s < 8; ++s) {
      if (!unpacked) prefetch_part<kPrefetchBlocks>(blocks + i, s, 8);
      __m512i q[8];
#pragma GCC unroll 8
      for (int w = 0; w < 8; ++w) q[w] = unpacked ? unpacked_quads(unpacked, i, 8 * s + w) : k4_quads(b, s, w);
      const __m512i scale = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales[s])));
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const int8_t* a = y[t][i].qs + 32 * s;
        __m512i dot[kChains];
        for (int k = 0; k < kChains; ++k) dot[k] = _mm512_setzero_si512();
#pragma GCC unroll 8
        for (int w = 0; w < 8; ++w) dot[w % kChains] = dot_quad(dot[w % kChains], q[w], a + 4 * w);
        const __m512i d = kChains == 2 ? _mm512_add_epi32(dot[0], dot[kChains - 1]) : dot[0];
        const __m512i p = _mm512_mullo_epi32(d, scale);
        sumi[t] = s == 0 ? p : _mm512_add_epi32(sumi[t], p);
      }
    }
    const __m512 d_w = halves(b.d), dmin_w = halves(b.dmin);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      __m512i summ = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        const __m512i mins = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.mins[c])));
        summ = dot_pair(summ, mins, &sums[t][i].pairs[c]);
      }
      const __m512 d_a = _mm512_set1_ps(y[t][i].d);
      acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(d_w, d_a), _mm512_cvtepi32_ps(sumi[t]), acc[t]);
      mn[t] = _mm512_fmadd_ps(_mm512_mul_ps(dmin_w, d_a), _mm512_cvtepi32_ps(summ), mn[t]);
    }
  }
  for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(out + t * out_stride, rows, _mm512_sub_ps(acc[t], mn[t]));
}

template <int T>
void q6_K_tokens(int64_t nb, const panel_q6_K* blocks, const UnpackedQuads* unpacked, const block_q8_K* const* y,
                 float* out, int64_t out_stride, __mmask16 rows) {
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const panel_q6_K& b = blocks[i];
    __m512i sumi[T];
    for (int t = 0; t < T; ++t) sumi[t] = _mm512_setzero_si512();
    for (int grp = 0; grp < 16; ++grp) {
      if (!unpacked) prefetch_part<kPrefetchBlocks>(blocks + i, grp, 16);
      __m512i q0, q1, q2, q3;
      if (unpacked) {
        q0 = unpacked_quads(unpacked, i, 4 * grp), q1 = unpacked_quads(unpacked, i, 4 * grp + 1);
        q2 = unpacked_quads(unpacked, i, 4 * grp + 2), q3 = unpacked_quads(unpacked, i, 4 * grp + 3);
      } else {
        q0 = q6_quads(b, grp, 0), q1 = q6_quads(b, grp, 1), q2 = q6_quads(b, grp, 2), q3 = q6_quads(b, grp, 3);
      }
      const __m512i scale = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales[grp])));
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const int8_t* a = y[t][i].qs + 16 * grp;
        __m512i d = dot_quad(_mm512_setzero_si512(), q0, a);
        d = dot_quad(d, q1, a + 4);
        d = dot_quad(d, q2, a + 8);
        d = dot_quad(d, q3, a + 12);
        const __m512i p = _mm512_mullo_epi32(d, scale);
        sumi[t] = _mm512_add_epi32(sumi[t], p);
      }
    }
    // The format's -32: each row's sum over groups of scale_g x the activation's group sum, by 16-bit
    // pair dots of (scale_2j, scale_2j+1) against (sum_2j, sum_2j+1), once a super-block and token
    // rather than in every group.
    __m512i scale_pairs[8];
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      const __m512i lo = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales[2 * j])));
      const __m512i hi = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales[2 * j + 1])));
      scale_pairs[j] = _mm512_or_si512(_mm512_and_si512(lo, _mm512_set1_epi32(0xffff)), _mm512_slli_epi32(hi, 16));
    }
    const __m512 d_w = halves(b.d);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      __m512i offset = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        offset = dot_pair(offset, scale_pairs[j], y[t][i].bsums + 2 * j);  // (sum_2j, sum_2j+1)
      }
      sumi[t] = _mm512_sub_epi32(sumi[t], _mm512_slli_epi32(offset, 5));
      acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(d_w, _mm512_set1_ps(y[t][i].d)), _mm512_cvtepi32_ps(sumi[t]), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(out + t * out_stride, rows, acc[t]);
}

// Tokens from which a call unpacks the panel's quants into a buffer first, rather than in
// registers in every pass of 8. The buffer (16 bytes a column: 32-128 KiB for a 2048-8192 wide
// panel) is written once and read back each pass, from L2 where it does not fit L1; that pays
// only over enough passes, and the fewer, the dearer the in-register unpacking is. Measured on
// the 1B shapes, 2 threads, alternated (AMD EPYC Zen 5; docs/benchmarks.md): unpacking at 16
// tokens cost 14-25% of every K type's step (decode of 16 chats included); Q6_K's gained 8-14%
// from 32 tokens, Q5_K's 2-5% from 128; Q4_K's (a nibble split, cheap in registers) lost at
// every size, 3% at 512 tokens.
template <typename Panel>
constexpr int64_t unpack_min_tokens() {
  if constexpr (std::is_same_v<Panel, panel_q6_K>) return 4 * kMaxPassTokens;
  else if constexpr (std::is_same_v<Panel, panel_q5_K>) return 16 * kMaxPassTokens;
  else return INT64_MAX;
}

// kernel(n, nb, blocks, unpacked, y, sums, out, out_stride, rows) over the token passes of `panel`
// (sums: the expanded rows' min sums, null for Q6_K).
template <typename Panel, typename Kernel>
void over_tokens(int64_t cols, const void* packed, int64_t panel, int64_t num_rows, const void* act,
                 size_t act_row_bytes, const void* expanded, int64_t num_tokens, float* out, int64_t out_stride,
                 const Kernel& kernel) {
  const int64_t nb = cols / kQKK;
  const auto* blocks = static_cast<const Panel*>(packed) + panel * nb;
  const auto* a = static_cast<const uint8_t*>(act);
  const UnpackedQuads* unpacked = nullptr;
  if (num_tokens >= unpack_min_tokens<Panel>()) {
    thread_local std::vector<UnpackedQuads> buffer;
    buffer.resize(static_cast<size_t>(nb * kUnpackedQuadsPerBlock));
    unpack_panel(blocks, nb, buffer.data());
    unpacked = buffer.data();
  }
  over_token_passes(num_tokens, [&](int64_t t0, auto n) {
    const block_q8_K* y[kMaxPassTokens];
    const vnni_q8_K_min_sums* sums[kMaxPassTokens] = {};
    for (int t = 0; t < n; ++t) {
      y[t] = reinterpret_cast<const block_q8_K*>(a + (t0 + t) * act_row_bytes);
      if (expanded) sums[t] = static_cast<const vnni_q8_K_min_sums*>(expanded) + (t0 + t) * nb;
    }
    kernel(n, nb, blocks, unpacked, y, sums, out + t0 * out_stride, out_stride, row_lanes(num_rows));
  });
}

}  // namespace

void k_panel_dot(GgmlType type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows, const void* act,
                 size_t act_row_bytes, const void* expanded, int64_t num_tokens, float* out, int64_t out_stride) {
  using Y = const block_q8_K* const*;
  using S = const vnni_q8_K_min_sums* const*;
  // The Q4_K and Q5_K kernel, and the Q6_K one, for a pass of n tokens.
  using U = const UnpackedQuads*;
  auto q4_K_family = [](auto n, int64_t nb, const auto* b, U u, Y y, S sums, float* o, int64_t stride,
                        __mmask16 rows) {
    q4_K_tokens<std::remove_cvref_t<decltype(*b)>, n>(nb, b, u, y, sums, o, stride, rows);
  };
  auto q6_K = [](auto n, int64_t nb, const panel_q6_K* b, U u, Y y, S, float* o, int64_t stride, __mmask16 rows) {
    q6_K_tokens<n>(nb, b, u, y, o, stride, rows);
  };
  auto run = [&](auto panel_type, const auto& kernel) {
    using Panel = typename decltype(panel_type)::type;
    over_tokens<Panel>(cols, packed, panel, num_rows, act, act_row_bytes, expanded, num_tokens, out, out_stride, kernel);
  };
  if (type == GgmlType::Q4_K) return run(std::type_identity<panel_q4_K>{}, q4_K_family);
  if (type == GgmlType::Q5_K) return run(std::type_identity<panel_q5_K>{}, q4_K_family);
  run(std::type_identity<panel_q6_K>{}, q6_K);
}

}  // namespace pagedchat::quant_avx512
#endif
