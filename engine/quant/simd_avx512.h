#pragma once
// Internal to engine/quant: small AVX-512 helpers for the panel kernels (*_avx512.cpp). Include
// it after every other header: it switches the rest of the file to AVX-512 F/BW/VL, VNNI and F16C
// code generation, which must not leak into inline functions shared with the rest of the build
// (the linker keeps one copy of each).

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "engine/quant/quant_avx512.h"

#if defined(PAGEDCHAT_QUANT_AVX512)
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")
// GCC 12's AVX-512 header makes its "undefined" vectors from themselves, which
// -Wmaybe-uninitialized reports at every inlined conversion (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

namespace pagedchat::quant_avx512 {

static inline uint32_t load_u32(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
// Quants q[0..3] in all 16 lanes (a vpbroadcastd; dot_quad below takes them as the dot's operand).
static inline __m512i quad(const int8_t* q) { return _mm512_set1_epi32(static_cast<int>(load_u32(q))); }
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
// 16 fp16 values as floats.
static inline __m512 halves(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
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
