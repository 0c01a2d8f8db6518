#pragma once
// Internal to engine/quant: small AVX-512 helpers for the panel kernels (*_avx512.cpp). Include
// it after every other header: it switches the rest of the file to AVX-512 F/BW/VL, VNNI and F16C
// code generation, which must not leak into inline functions shared with the rest of the build
// (the linker keeps one copy of each).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "engine/quant/quant_avx512.h"

#if defined(PAGEDCHAT_QUANT_AVX512)
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")
// GCC 12's AVX-512 header makes its "undefined" vectors from themselves, which
// -Wmaybe-uninitialized reports at every inlined conversion (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

namespace pagedchat::quant_avx512 {

// acc + the 4-way byte dots of u (unsigned) with the activation quad at q broadcast to every
// lane, the broadcast folded into the instruction's memory operand ({1to16}): GCC 12 does not
// fold _mm512_set1_epi32 into vpdpbusd, and a separate vpbroadcastd for each dot is a quarter
// of a K-quant kernel's instructions.
// The asm reads the quad through a may_alias type: it is int8_t data.
typedef int32_t quad_bytes __attribute__((may_alias, aligned(1)));
static inline __m512i dot_quad(__m512i acc, __m512i u, const int8_t* q) {
  __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(u), "m"(*reinterpret_cast<const quad_bytes*>(q)));
  return acc;
}
// acc + the 16-bit pair dots of v with the pair at p broadcast to every lane, as dot_quad does it.
static inline __m512i dot_pair(__m512i acc, __m512i v, const void* p) {
  __asm__("vpdpwssd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(v), "m"(*static_cast<const quad_bytes*>(p)));
  return acc;
}
// 16 fp16 values as floats.
static inline __m512 halves(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// The most tokens a panel kernel takes in one pass: 8 integer sums and 8 float sums fill the 32
// vector registers with what the pass needs besides.
constexpr int kMaxPassTokens = 8;
// The token passes of a panel kernel (16 rows, one vector): run(t0, n) for n = 8, 4, 2 or 1
// tokens from t0 on (8s while they fit, then at most one of each smaller size). n is a
// std::integral_constant, so each pass size gets its own instance of the kernel.
template <typename Run>
static inline void over_token_passes(int64_t num_tokens, const Run& run) {
  static_assert(kMaxPassTokens == 8, "the passes below");
  for (int64_t t0 = 0; t0 < num_tokens;) {
    const int64_t left = num_tokens - t0;
    if (left >= 8) run(t0, std::integral_constant<int, 8>{}), t0 += 8;
    else if (left >= 4) run(t0, std::integral_constant<int, 4>{}), t0 += 4;
    else if (left >= 2) run(t0, std::integral_constant<int, 2>{}), t0 += 2;
    else run(t0, std::integral_constant<int, 1>{}), t0 += 1;
  }
}
// The lanes of a panel's first num_rows (<= 16) rows, the ones a kernel stores.
static inline __mmask16 row_lanes(int64_t num_rows) { return static_cast<__mmask16>((1u << num_rows) - 1); }

// A pass's activation rows for the kernels of 32-element blocks (Q4_1, Q8_0, Q4_0, Q5_0, Q5_1):
// each token's compact row (the quants) and expanded row (the block scales, expand_vnni_scales).
template <typename Act, typename Scales>
struct BlockTokens {
  const Act* y[kMaxPassTokens];
  const Scales* scales[kMaxPassTokens];
};
// over_token_passes for those kernels: run(t0, n, tokens) with each pass's rows found, the
// compact ones act_row_bytes apart, the expanded ones nb Scales apart.
template <typename Act, typename Scales, typename Run>
static inline void over_block_token_passes(int64_t nb, const void* act, size_t act_row_bytes, const void* expanded,
                                           int64_t num_tokens, const Run& run) {
  const auto* a = static_cast<const uint8_t*>(act);
  const auto* x = static_cast<const uint8_t*>(expanded);
  const size_t scales_bytes = static_cast<size_t>(nb) * sizeof(Scales);
  over_token_passes(num_tokens, [&](int64_t t0, auto n) {
    BlockTokens<Act, Scales> tok;
    for (int t = 0; t < n; ++t) {
      tok.y[t] = reinterpret_cast<const Act*>(a + (t0 + t) * act_row_bytes);
      tok.scales[t] = reinterpret_cast<const Scales*>(x + (t0 + t) * scales_bytes);
    }
    run(t0, n, tok);
  });
}

// Asks for the block Ahead blocks on (of this panel, or past its end: the next panel, which the
// matmul's next task usually reads; a prefetch never faults). A decode step reads every weight
// once, from memory, and two threads taking panels in turn break the stream the hardware
// prefetcher would follow. prefetch_part asks for part `part` of `parts` of it, so that a big
// block's requests are spread over its loop instead of coming in one burst.
template <int Ahead, typename Block>
static inline void prefetch_ahead(const Block* at) {
  const char* p = reinterpret_cast<const char*>(at + Ahead);
  for (size_t b = 0; b < sizeof(Block); b += 64) _mm_prefetch(p + b, _MM_HINT_T0);
}
template <int Ahead, typename Block>
static inline void prefetch_part(const Block* at, int part, int parts) {
  constexpr size_t kLines = (sizeof(Block) + 63) / 64;
  const char* p = reinterpret_cast<const char*>(at + Ahead);
  const size_t first = kLines * static_cast<size_t>(part) / static_cast<size_t>(parts);
  const size_t last = kLines * static_cast<size_t>(part + 1) / static_cast<size_t>(parts);
  for (size_t l = first; l < last; ++l) _mm_prefetch(p + 64 * l, _MM_HINT_T0);
}

}  // namespace pagedchat::quant_avx512
#endif
