#pragma once
// The AVX2 tile loader (AttentionKernel::load_tile), shared by the AVX2 and AVX-512 kernels:
// include it after a `#pragma GCC target` that has avx2, fma and f16c, and after every standard
// header (it instantiates none). Internal linkage, so each kernel file compiles it for its own
// target. Conversions are exact (f16 to f32, int8 to
// f32) or one multiply (the Q8_0 scale), as decode_kv_row does them.

#include <immintrin.h>

#include "engine/backend/cpu/attention/attention_kernel.h"
#include "engine/common/float16.h"

namespace pagedchat::cpu {
namespace {

inline void avx2_decode_row(KvType type, const uint8_t* src, float* dst, int hd) {
  int d = 0;
  switch (type) {
    case KvType::F32: __builtin_memcpy(dst, src, sizeof(float) * hd); return;
    case KvType::F16:
      for (; d + 8 <= hd; d += 8)
        _mm256_storeu_ps(dst + d, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * d))));
      for (; d < hd; ++d) {
        uint16_t h;
        __builtin_memcpy(&h, src + 2 * d, 2);
        dst[d] = fp16_to_fp32(h);
      }
      return;
    case KvType::Q8_0:
      for (; d < hd; d += 32, src += 34) {  // a block: fp16 scale, then 32 int8
        uint16_t h;
        __builtin_memcpy(&h, src, 2);
        const __m256 scale = _mm256_set1_ps(fp16_to_fp32(h));
        for (int i = 0; i < 4; ++i) {
          const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + 2 + 8 * i));
          _mm256_storeu_ps(dst + d + 8 * i, _mm256_mul_ps(scale, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q))));
        }
      }
      return;
  }
}

// Rows r[0..8) of 8 floats become columns: c[i] = (r[0][i], ..., r[7][i]).
inline void transpose8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

// 8 floats of a row at d, as f32: straight from an f32 or f16 row.
template <KvType T>
inline __m256 avx2_load8(const uint8_t* row, int d) {
  if constexpr (T == KvType::F32) return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + d);
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * d)));
}

// A whole tile of f32 or f16 rows (hd a multiple of 8): values converted in place, keys
// transposed straight from their rows, 8 keys by 8 d at a time.
template <KvType T>
inline void avx2_load_full_tile(const uint8_t* const* key_rows, const uint8_t* const* value_rows, int hd, float* kt,
                                float* v) {
  for (int j = 0; j < kTileKeys; ++j)
    for (int d = 0; d < hd; d += 8) _mm256_storeu_ps(v + static_cast<size_t>(j) * hd + d, avx2_load8<T>(value_rows[j], d));
  for (int d0 = 0; d0 < hd; d0 += 8)
    for (int j0 = 0; j0 < kTileKeys; j0 += 8) {
      __m256 r[8];
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) r[i] = avx2_load8<T>(key_rows[j0 + i], d0);
      transpose8(r);
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) _mm256_storeu_ps(kt + (d0 + i) * kTileKeys + j0, r[i]);
    }
}

inline void avx2_load_tile(KvType type, const uint8_t* const* key_rows, const uint8_t* const* value_rows, int n, int hd,
                           float* kt, float* v) {
  if (n == kTileKeys && hd % 8 == 0) {
    if (type == KvType::F16) return avx2_load_full_tile<KvType::F16>(key_rows, value_rows, hd, kt, v);
    if (type == KvType::F32) return avx2_load_full_tile<KvType::F32>(key_rows, value_rows, hd, kt, v);
  }
  alignas(32) float keys[kTileKeys * kMaxHeadDim];  // [kTileKeys][hd], rows >= n zero
  for (int i = n * hd; i < kTileKeys * hd; ++i) keys[i] = 0.0f;
  for (int j = 0; j < n; ++j) {
    avx2_decode_row(type, key_rows[j], keys + static_cast<size_t>(j) * hd, hd);
    avx2_decode_row(type, value_rows[j], v + static_cast<size_t>(j) * hd, hd);
  }
  int d0 = 0;
  for (; d0 + 8 <= hd; d0 += 8)
    for (int j0 = 0; j0 < kTileKeys; j0 += 8) {
      __m256 r[8];
      for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(keys + static_cast<size_t>(j0 + i) * hd + d0);
      transpose8(r);
      for (int i = 0; i < 8; ++i) _mm256_storeu_ps(kt + (d0 + i) * kTileKeys + j0, r[i]);
    }
  for (; d0 < hd; ++d0)
    for (int j = 0; j < kTileKeys; ++j) kt[d0 * kTileKeys + j] = keys[static_cast<size_t>(j) * hd + d0];
}

}  // namespace
}  // namespace pagedchat::cpu
