#pragma once
// Internal to engine/quant: small AVX2 helpers for the *_avx2.cpp files. Include it after every
// other header: in a runtime-dispatch build it switches the rest of the file to AVX2/FMA/F16C
// code generation, which must not leak into inline functions shared with scalar code.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "engine/common/float16.h"
#include "engine/quant/quant_avx2.h"

#if defined(PAGEDCHAT_QUANT_AVX2)
#if PAGEDCHAT_QUANT_AVX2 == 2
#pragma GCC target("avx2,fma,f16c")
#endif
#include <immintrin.h>

namespace pagedchat::quant_avx2 {

// Scalar fields of blocks are read with memcpy: rows may start at any byte address.
static inline uint32_t load_u32(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
static inline uint16_t load_u16(const void* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
static inline float load_f32(const void* p) {
  float v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
static inline __m256i load_256(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}
static inline void store_256(void* p, __m256i v) { _mm256_storeu_si256(static_cast<__m256i*>(p), v); }
static inline __m128i load_128(const void* p) {
  return _mm_loadu_si128(static_cast<const __m128i*>(p));
}
static inline float half_at(const void* p) { return _cvtsh_ss(load_u16(p)); }

// Two adjacent fp16 values (d and m, or d and s) as floats in lanes 0 and 1.
static inline __m128 half_pair_at(const void* p) {
  return _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(load_u32(p))));
}

// 16 bytes of packed nibbles -> 32 bytes: low nibbles (elements 0..15), then high (16..31).
static inline __m256i nibbles_to_bytes(__m128i packed) {
  const __m256i both = _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}

// Bit j of `bits` -> byte j set to 0xff (bit set) or 0 (clear), for j in [0, 32).
static inline __m256i bits_to_bytes(uint32_t bits) {
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(bits)),
      _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
  const __m256i bit_of_byte = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  return _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit_of_byte), bit_of_byte);
}

// The sum of 8 floats, always added in the same order.
static inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

static inline int hsum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
  return _mm_cvtsi128_si32(s);
}

// a * b + c in one rounding.
static inline float fma_ss(float a, float b, float c) {
  return _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(a), _mm_set_ss(b), _mm_set_ss(c)));
}

// Sums of adjacent pairs of unsigned-byte x signed-byte products, widened to 8 int32 lanes.
static inline __m256i dot_u8_i8(__m256i u, __m256i s) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

// The same for two signed vectors; `a` may hold -128, `b` must not.
static inline __m256i dot_i8_i8(__m256i a, __m256i b) {
  return dot_u8_i8(_mm256_sign_epi8(a, a), _mm256_sign_epi8(b, a));
}

// The panel kernels' operands: an activation quad (4 quants at q) broadcast to every 32-bit
// lane, what a byte-pair multiply (vpmaddubsw) takes against 8 rows' interleaved quads.
static inline __m256i quad(const int8_t* q) { return _mm256_set1_epi32(static_cast<int>(load_u32(q))); }
// 8 unsigned bytes as 32-bit lanes, each value in both of its 16-bit halves (vpmaddwd's operand).
static inline __m256i u8_pairs(const uint8_t* p) {
  const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  return _mm256_or_si256(v, _mm256_slli_epi32(v, 16));
}
// 8 32-bit values of lo and hi as 16-bit pairs (lo, hi) in each lane.
static inline __m256i pairs_of(__m256i lo, __m256i hi) {
  return _mm256_blend_epi16(lo, _mm256_slli_epi32(hi, 16), 0xAA);
}
// The same for 8 signed bytes.
static inline __m256i s8_pairs(const int8_t* p) {
  const __m256i v = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  return pairs_of(v, v);
}

// An empty asm that "changes" v: the compiler cannot reassociate the integer sums across it.
// Without it GCC sums each token's products as a tree after computing them all, which needs
// many live vectors and spills most of them to the stack.
static inline void keep_in_register(__m256i& v) { asm("" : "+x"(v)); }

// Asks for part `part` of `parts` of the block Ahead blocks on, spread over the block's loop: a
// decode step streams every weight once from memory, and two threads taking panels in turn
// break the stream the hardware prefetcher would follow.
template <int Ahead, typename Block>
static inline void prefetch_part(const Block* at, int part, int parts) {
  constexpr size_t kLines = (sizeof(Block) + 63) / 64;
  const char* p = reinterpret_cast<const char*>(at + Ahead);
  const size_t first = kLines * static_cast<size_t>(part) / static_cast<size_t>(parts);
  const size_t last = kLines * static_cast<size_t>(part + 1) / static_cast<size_t>(parts);
  for (size_t l = first; l < last; ++l) _mm_prefetch(p + 64 * l, _MM_HINT_T0);
}

// The token passes of a 16-row panel kernel of at most 4 tokens: run(t0, n, out, stride) for
// n = 4, 2 or 1 tokens from t0 on, writing the panel's 16 results per token at out + t * stride.
// n is a std::integral_constant, so each pass size gets its own instance of the kernel. A partial
// panel (num_rows < 16) is written into a scratch and its rows copied out.
template <typename Run>
void over_four_token_passes(int64_t num_tokens, int64_t num_rows, float* out, int64_t out_stride, const Run& run) {
  constexpr int64_t kRows = 16;
  float partial[4 * kRows];
  auto pass = [&](int64_t t0, auto n) {
    const bool whole = num_rows == kRows;
    run(t0, n, whole ? out + t0 * out_stride : partial, whole ? out_stride : kRows);
    if (!whole)
      for (int t = 0; t < n; ++t) std::copy_n(partial + t * kRows, num_rows, out + (t0 + t) * out_stride);
  };
  for (int64_t t0 = 0; t0 < num_tokens;) {
    const int64_t left = num_tokens - t0;
    if (left >= 4) pass(t0, std::integral_constant<int, 4>{}), t0 += 4;
    else if (left >= 2) pass(t0, std::integral_constant<int, 2>{}), t0 += 2;
    else pass(t0, std::integral_constant<int, 1>{}), t0 += 1;
  }
}

// Float weight formats: 8 elements as floats, one element, bytes per element.
struct F32 {
  static __m256 load8(const uint8_t* p) { return _mm256_loadu_ps(reinterpret_cast<const float*>(p)); }
  static float load1(const uint8_t* p) { float v; std::memcpy(&v, p, 4); return v; }
  static constexpr size_t kBytes = 4;
};
struct F16 {
  static __m256 load8(const uint8_t* p) { return _mm256_cvtph_ps(load_128(p)); }
  static float load1(const uint8_t* p) { return half_at(p); }
  static constexpr size_t kBytes = 2;
};
struct BF16 {
  static __m256 load8(const uint8_t* p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(load_128(p)), 16));
  }
  static float load1(const uint8_t* p) { return bf16_to_fp32(load_u16(p)); }
  static constexpr size_t kBytes = 2;
};

}  // namespace pagedchat::quant_avx2
#endif
