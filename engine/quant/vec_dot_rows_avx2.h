#pragma once
// Internal to engine/quant: the row driver the AVX2 dot-product kernels share (vec_dot_avx2.cpp,
// vec_dot_low_bits_avx2.cpp). Include it after simd_avx2.h.
//
// A kernel is a struct with `template <int R> static void rows(n, w, stride, act, out, prefetch)`
// computing R rows at once; each row runs the same instruction sequence whatever R is, so a
// row's result does not depend on the rows computed with it (quant.h's determinism promise).

#if defined(PAGEDCHAT_QUANT_AVX2)
namespace pagedchat::quant_avx2 {
namespace {

constexpr int kRowsPerPass = 4;
constexpr size_t kCacheLine = 64;
constexpr size_t kPrefetchMinBytes = 64 << 10;

// Prefetches `bytes` from `offset` of the R rows after these R, one pass ahead. The hardware
// prefetcher sees R interleaved streams and falls behind: on a 64 MB matrix this measured
// 20-60% faster (Q4_1, Q8_0, one thread).
template <int R>
static inline void prefetch_next_rows(const uint8_t* w, size_t stride, size_t offset, size_t bytes) {
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    for (size_t b = 0; b < bytes; b += kCacheLine) {
      _mm_prefetch(reinterpret_cast<const char*>(w + (R + r) * stride + offset + b), _MM_HINT_T0);
    }
  }
}

template <typename Kernel>
void run_rows(int64_t n, const void* w, size_t stride, int64_t num_rows, const void* act, float* out,
              WeightAccess access) {
  const auto* base = static_cast<const uint8_t*>(w);
  // Prefetching pays when the weights come from memory (decode: each matrix is read once per
  // token), and costs up to a quarter of the speed (Q8_0) when they are already in L2. A call
  // over less than this much is likely to be the latter, or too short to matter; a caller
  // that knows says so.
  const bool prefetch = access == WeightAccess::kStreaming ||
                        (access == WeightAccess::kAuto && static_cast<size_t>(num_rows) * stride >= kPrefetchMinBytes);
  int64_t r = 0;
  for (; r + kRowsPerPass <= num_rows; r += kRowsPerPass) {
    Kernel::template rows<kRowsPerPass>(n, base + r * stride, stride, act, out + r, prefetch);
  }
  switch (num_rows - r) {
    case 3: Kernel::template rows<3>(n, base + r * stride, stride, act, out + r, false); break;
    case 2: Kernel::template rows<2>(n, base + r * stride, stride, act, out + r, false); break;
    case 1: Kernel::template rows<1>(n, base + r * stride, stride, act, out + r, false); break;
    default: break;
  }
}

}  // namespace
}  // namespace pagedchat::quant_avx2
#endif
