// AVX2 dot products of weight rows with one prepared activation row, several rows per pass
// so the activation block loaded once serves them all.
//
// Every kernel is a template on R, the rows in flight. Each row has its own accumulators and
// runs the same instruction sequence whatever R is, so a row's result does not depend on the
// rows computed with it (quant.h's determinism promise); vec_dot is the R = 1 case.

#include "engine/quant/quant_avx2.h"
#include "engine/quant/quant_blocks.h"
#include "engine/quant/simd_avx2.h"
#include "engine/quant/vec_dot_rows_avx2.h"

#if defined(PAGEDCHAT_QUANT_AVX2)
namespace pagedchat::quant_avx2 {
namespace {

// ---- 32-element blocks --------------------------------------------------------------------
// Per block and row: the exact integer dot product in 8 int32 lanes, then
// acc += (d_w * d_a) * float(lanes) with one fma. Weights with a minimum add m_w * s_a.

// quants() gives the block's 32 quants as bytes; kOffset is what the format subtracts from them
// (0: they are signed already).
struct Q4_0 {
  using Block = block_q4_0;
  static constexpr int kOffset = 8;
  static __m256i quants(const uint8_t* b) { return nibbles_to_bytes(load_128(b + 2)); }  // 0..15
};
struct Q5_0 {
  using Block = block_q5_0;
  static constexpr int kOffset = 16;
  static __m256i quants(const uint8_t* b) {  // 0..31
    const __m256i high = _mm256_and_si256(bits_to_bytes(load_u32(b + 2)), _mm256_set1_epi8(0x10));
    return _mm256_or_si256(nibbles_to_bytes(load_128(b + 6)), high);
  }
};
struct Q8_0 {
  using Block = block_q8_0;
  static constexpr int kOffset = 0;
  static __m256i quants(const uint8_t* b) { return load_256(b + 2); }  // -128..127
};
struct Q4_1 {
  using Block = block_q4_1;
  static __m256i quants(const uint8_t* b) { return nibbles_to_bytes(load_128(b + 4)); }  // 0..15
};
struct Q5_1 {
  using Block = block_q5_1;
  static __m256i quants(const uint8_t* b) {  // 0..31
    const __m256i high = _mm256_and_si256(bits_to_bytes(load_u32(b + 4)), _mm256_set1_epi8(0x10));
    return _mm256_or_si256(nibbles_to_bytes(load_128(b + 8)), high);
  }
};

// Q4_0, Q5_0, Q8_0 weights against Q8_0 activations. With an offset, (q - k) . y is computed
// as q . y - k sum(y), the second term once per block for all rows: cheaper than the sign trick.
template <typename Format>
struct DotSymmetric {
  template <int R>
  static void rows(int64_t n, const uint8_t* w, size_t stride, const void* act, float* out, bool prefetch) {
    constexpr size_t block_bytes = sizeof(typename Format::Block);
    const auto* y = static_cast<const block_q8_0*>(act);
    __m256 acc[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
    constexpr int64_t kBlocksPerLine = (kCacheLine + block_bytes / 2) / block_bytes;  // rounded
    for (int64_t i = 0; i < n / kQK; ++i) {
      if (prefetch && i % kBlocksPerLine == 0) prefetch_next_rows<R>(w, stride, i * block_bytes, 1);
      const __m256i qy = load_256(y[i].qs);
      const float dy = half_at(&y[i].d);
      __m256i offset = _mm256_setzero_si256();
      if constexpr (Format::kOffset != 0) offset = dot_u8_i8(_mm256_set1_epi8(Format::kOffset), qy);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const uint8_t* b = w + r * stride + i * block_bytes;
        __m256i dot;
        if constexpr (Format::kOffset != 0) {
          dot = _mm256_sub_epi32(dot_u8_i8(Format::quants(b), qy), offset);
        } else {
          dot = dot_i8_i8(Format::quants(b), qy);
        }
        acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(half_at(b) * dy), _mm256_cvtepi32_ps(dot), acc[r]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) out[r] = hsum(acc[r]);
  }
};

// Q4_1, Q5_1 weights against Q8_1 activations.
template <typename Format>
struct DotWithMin {
  template <int R>
  static void rows(int64_t n, const uint8_t* w, size_t stride, const void* act, float* out, bool prefetch) {
    constexpr size_t block_bytes = sizeof(typename Format::Block);
    const auto* y = static_cast<const block_q8_1*>(act);
    __m256 acc[R];
    __m128 acc_min[R];  // lane 1: sum of m_w * s_a (lane 0 is a by-product, unused)
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      acc[r] = _mm256_setzero_ps();
      acc_min[r] = _mm_setzero_ps();
    }
    constexpr int64_t kBlocksPerLine = (kCacheLine + block_bytes / 2) / block_bytes;  // rounded
    for (int64_t i = 0; i < n / kQK; ++i) {
      if (prefetch && i % kBlocksPerLine == 0) prefetch_next_rows<R>(w, stride, i * block_bytes, 1);
      const __m256i qy = load_256(y[i].qs);
      const __m128 dy_sy = half_pair_at(&y[i].d);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const uint8_t* b = w + r * stride + i * block_bytes;
        const __m128 scales = _mm_mul_ps(half_pair_at(b), dy_sy);  // d_w d_a, m_w s_a
        const __m256i dot = dot_u8_i8(Format::quants(b), qy);
        acc[r] = _mm256_fmadd_ps(_mm256_broadcastss_ps(scales), _mm256_cvtepi32_ps(dot), acc[r]);
        acc_min[r] = _mm_add_ps(acc_min[r], scales);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) out[r] = hsum(acc[r]) + _mm_cvtss_f32(_mm_movehdup_ps(acc_min[r]));
  }
};

// ---- K-quants ---------------------------------------------------------------------------
// Per super-block and row the whole integer sum (scales included) is formed exactly, as the
// reference does, then acc = fma(d_w d_a, float(sum), acc).

// The 8 scales (bytes 0-7) and 8 mins (bytes 8-15) of a Q4_K/Q5_K super-block, unpacked.
static inline __m128i unpack_scales_mins_k4(const uint8_t* packed) {
  const uint32_t s0 = load_u32(packed), s1 = load_u32(packed + 4), s2 = load_u32(packed + 8);
  const uint32_t scales_lo = s0 & 0x3f3f3f3fu;
  const uint32_t mins_lo = s1 & 0x3f3f3f3fu;
  const uint32_t scales_hi = (s2 & 0x0f0f0f0fu) | ((s0 >> 2) & 0x30303030u);
  const uint32_t mins_hi = ((s2 >> 4) & 0x0f0f0f0fu) | ((s1 >> 2) & 0x30303030u);
  return _mm_set_epi32(static_cast<int>(mins_hi), static_cast<int>(mins_lo),
                       static_cast<int>(scales_hi), static_cast<int>(scales_lo));
}

// int16 scale s of 8 (held in both 128-bit lanes of `scales16`) broadcast to 16 lanes.
static inline __m256i scale_k4(__m256i scales16, int s) {
  return _mm256_shuffle_epi8(scales16, _mm256_set1_epi16(static_cast<short>((2 * s + 1) << 8 | 2 * s)));
}

template <bool kFiveBits>
struct DotK4 {  // Q4_K (kFiveBits = false) and Q5_K against Q8_K
  using Block = std::conditional_t<kFiveBits, block_q5_K, block_q4_K>;

  template <int R>
  static void rows(int64_t n, const uint8_t* w, size_t stride, const void* act, float* out, bool prefetch) {
    const auto* y = static_cast<const block_q8_K*>(act);
    float acc[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[r] = 0.0f;
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    for (int64_t i = 0; i < n / kQKK; ++i) {
      if (prefetch) prefetch_next_rows<R>(w, stride, i * sizeof(Block), sizeof(Block));
      const __m128 dy = _mm_set1_ps(y[i].d);
      const __m256i bsums = load_256(y[i].bsums);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const uint8_t* b = w + r * stride + i * sizeof(Block);
        const __m128 d_dmin = _mm_mul_ps(half_pair_at(b), dy);
        const __m128i scales_mins = unpack_scales_mins_k4(b + 4);
        // mins: sum_s min_s * (bsums[2s] + bsums[2s+1])
        const __m256i mins16 = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(scales_mins, scales_mins));
        const int summins = hsum(_mm256_madd_epi16(bsums, mins16));
        const __m256i scales16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(scales_mins));
        const uint8_t* qs = b + (kFiveBits ? 48 : 16);
        __m256i high = _mm256_setzero_si256();
        if constexpr (kFiveBits) high = load_256(b + 16);
        __m256i sumi = _mm256_setzero_si256();
        for (int c = 0; c < 4; ++c) {
          const __m256i packed = load_256(qs + 32 * c);
          __m256i q_lo = _mm256_and_si256(packed, low4);
          __m256i q_hi = _mm256_and_si256(_mm256_srli_epi16(packed, 4), low4);
          if constexpr (kFiveBits) {
            const __m256i one = _mm256_set1_epi8(1);
            const __m256i h_lo = _mm256_and_si256(_mm256_srli_epi16(high, 2 * c), one);
            const __m256i h_hi = _mm256_and_si256(_mm256_srli_epi16(high, 2 * c + 1), one);
            q_lo = _mm256_or_si256(q_lo, _mm256_slli_epi16(h_lo, 4));
            q_hi = _mm256_or_si256(q_hi, _mm256_slli_epi16(h_hi, 4));
          }
          const __m256i p_lo = _mm256_maddubs_epi16(q_lo, load_256(y[i].qs + 64 * c));
          const __m256i p_hi = _mm256_maddubs_epi16(q_hi, load_256(y[i].qs + 64 * c + 32));
          sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p_lo, scale_k4(scales16, 2 * c)));
          sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p_hi, scale_k4(scales16, 2 * c + 1)));
        }
        acc[r] = fma_ss(_mm_cvtss_f32(d_dmin), static_cast<float>(hsum(sumi)), acc[r]);
        acc[r] = fma_ss(-_mm_cvtss_f32(_mm_movehdup_ps(d_dmin)), static_cast<float>(summins), acc[r]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) out[r] = acc[r];
  }
};

struct DotQ6K {
  template <int R>
  static void rows(int64_t n, const uint8_t* w, size_t stride, const void* act, float* out, bool prefetch) {
    const auto* y = static_cast<const block_q8_K*>(act);
    float acc[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[r] = 0.0f;
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    const __m256i two_bits = _mm256_set1_epi8(3);
    for (int64_t i = 0; i < n / kQKK; ++i) {
      if (prefetch) prefetch_next_rows<R>(w, stride, i * sizeof(block_q6_K), sizeof(block_q6_K));
      const float dy = y[i].d;
      const __m256i bsums = load_256(y[i].bsums);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const uint8_t* b = w + r * stride + i * sizeof(block_q6_K);
        const __m128i scales8 = load_128(b + 192);
        // The -32 offset: 32 * sum_g scale_g * bsums[g], taken out of the unsigned products.
        const int offset = hsum(_mm256_madd_epi16(_mm256_cvtepi8_epi16(scales8), bsums));
        __m256i sumi = _mm256_setzero_si256();
        for (int h = 0; h < 2; ++h) {
          const __m256i ql0 = load_256(b + 64 * h);
          const __m256i ql1 = load_256(b + 64 * h + 32);
          const __m256i qh = load_256(b + 128 + 32 * h);
          const __m256i q[4] = {
              _mm256_or_si256(_mm256_and_si256(ql0, low4),
                              _mm256_slli_epi16(_mm256_and_si256(qh, two_bits), 4)),
              _mm256_or_si256(_mm256_and_si256(ql1, low4),
                              _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), two_bits), 4)),
              _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                              _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), two_bits), 4)),
              _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                              _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), two_bits), 4)),
          };
          for (int k = 0; k < 4; ++k) {
            const int g = 8 * h + 2 * k;  // groups g (elements 0..15) and g + 1 (16..31)
            const __m128i pick = _mm_set_epi64x(0x0101010101010101ll * (g + 1), 0x0101010101010101ll * g);
            const __m256i scale_pair = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales8, pick));
            const __m256i p = _mm256_maddubs_epi16(q[k], load_256(y[i].qs + 128 * h + 32 * k));
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, scale_pair));
          }
        }
        const float d = dy * half_at(b + 208);
        acc[r] = fma_ss(d, static_cast<float>(hsum(sumi) - 32 * offset), acc[r]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) out[r] = acc[r];
  }
};

// ---- float weights against float activations ----------------------------------------------

// Two 8-lane accumulators per row over 16 elements a step, then 8, then one at a time.
template <typename Format>
struct DotFloat {
  template <int R>
  static void rows(int64_t n, const uint8_t* w, size_t stride, const void* act, float* out, bool prefetch) {
    const auto* a = static_cast<const float*>(act);
    __m256 acc0[R], acc1[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc0[r] = acc1[r] = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
      if (prefetch && j * Format::kBytes % kCacheLine == 0) prefetch_next_rows<R>(w, stride, j * Format::kBytes, 1);
      const __m256 a0 = _mm256_loadu_ps(a + j), a1 = _mm256_loadu_ps(a + j + 8);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const uint8_t* p = w + r * stride + j * Format::kBytes;
        acc0[r] = _mm256_fmadd_ps(Format::load8(p), a0, acc0[r]);
        acc1[r] = _mm256_fmadd_ps(Format::load8(p + 8 * Format::kBytes), a1, acc1[r]);
      }
    }
    if (j + 8 <= n) {
      const __m256 a0 = _mm256_loadu_ps(a + j);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        acc0[r] = _mm256_fmadd_ps(Format::load8(w + r * stride + j * Format::kBytes), a0, acc0[r]);
      }
      j += 8;
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      float sum = hsum(_mm256_add_ps(acc0[r], acc1[r]));
      for (int64_t k = j; k < n; ++k) sum = fma_ss(Format::load1(w + r * stride + k * Format::kBytes), a[k], sum);
      out[r] = sum;
    }
  }
};

}  // namespace

void vec_dot_rows(GgmlType type, int64_t n, const void* w, size_t stride, int64_t num_rows,
                  const void* act, float* out, WeightAccess access) {
  switch (type) {
    case GgmlType::Q4_0: return run_rows<DotSymmetric<Q4_0>>(n, w, stride, num_rows, act, out, access);
    case GgmlType::Q5_0: return run_rows<DotSymmetric<Q5_0>>(n, w, stride, num_rows, act, out, access);
    case GgmlType::Q8_0: return run_rows<DotSymmetric<Q8_0>>(n, w, stride, num_rows, act, out, access);
    case GgmlType::Q4_1: return run_rows<DotWithMin<Q4_1>>(n, w, stride, num_rows, act, out, access);
    case GgmlType::Q5_1: return run_rows<DotWithMin<Q5_1>>(n, w, stride, num_rows, act, out, access);
    case GgmlType::Q4_K: return run_rows<DotK4<false>>(n, w, stride, num_rows, act, out, access);
    case GgmlType::Q5_K: return run_rows<DotK4<true>>(n, w, stride, num_rows, act, out, access);
    case GgmlType::Q6_K: return run_rows<DotQ6K>(n, w, stride, num_rows, act, out, access);
    case GgmlType::F32: return run_rows<DotFloat<F32>>(n, w, stride, num_rows, act, out, access);
    case GgmlType::F16: return run_rows<DotFloat<F16>>(n, w, stride, num_rows, act, out, access);
    case GgmlType::BF16: return run_rows<DotFloat<BF16>>(n, w, stride, num_rows, act, out, access);
    case GgmlType::Q2_K: case GgmlType::Q3_K: case GgmlType::IQ4_NL: case GgmlType::IQ4_XS: case GgmlType::MXFP4:
      return vec_dot_rows_low_bits(type, n, w, stride, num_rows, act, out, access);
    default: break;  // quant.cpp admits only the types has_vec_dot names
  }
}

bool has_vec_dot(GgmlType type) {
  switch (type) {
    case GgmlType::Q4_0: case GgmlType::Q5_0: case GgmlType::Q8_0: case GgmlType::Q4_1: case GgmlType::Q5_1:
    case GgmlType::Q4_K: case GgmlType::Q5_K: case GgmlType::Q6_K: case GgmlType::F32: case GgmlType::F16:
    case GgmlType::BF16: case GgmlType::Q2_K: case GgmlType::Q3_K: case GgmlType::IQ4_NL: case GgmlType::IQ4_XS:
    case GgmlType::MXFP4:
      return true;
    default:
      return false;
  }
}

}  // namespace pagedchat::quant_avx2
#endif
