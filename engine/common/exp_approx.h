#pragma once
// exp(x) for float, written as a fixed sequence of correctly rounded steps (one multiply, a
// rounding, fused multiply-adds, an exponent build) so that any implementation of those steps,
// scalar or SIMD, host or CUDA device, gives the same bits. glibc's expf and CUDA's expf
// differ by an ulp here and there, and a vectorized glibc is not to be had; this one is
// within 2 ulp of exp over the whole range (tested) and the CPU's SIMD loops share it.
//
// Method: x = n ln2 + r with n = round(x / ln2) and |r| <= ln2 / 2 (ln2 split in two parts, so
// r is exact enough), exp(r) by a degree-7 polynomial (Horner, fma), times 2^n built from
// the exponent bits. Below kExpMin the result is 0; above kExpMax it is clamped (exp(88.3));
// NaN stays NaN.

#include <cmath>
#include <cstdint>
#include <cstring>

#include "engine/common/float16.h"  // PC_HOST_DEVICE

namespace pagedchat {

inline constexpr float kExpMin = -87.33654f;  // ~ln(2^-126): smaller inputs give 0
inline constexpr float kExpMax = 88.3f;        // larger inputs are clamped here (n stays <= 127)
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693359375f;       // ln 2, first bits (exact product with n)
inline constexpr float kLn2Lo = -2.12194440e-4f;    // ln 2 - kLn2Hi
// exp(r) ~ 1 + r + r^2 (c0 + r (c1 + r (c2 + ...))) on [-ln2/2, ln2/2] (scalars, not an array:
// CUDA device code may read constexpr scalars but not constexpr arrays)
inline constexpr float kExpC0 = 5.0000001201e-1f;
inline constexpr float kExpC1 = 1.6666665459e-1f;
inline constexpr float kExpC2 = 4.1665795894e-2f;
inline constexpr float kExpC3 = 8.3334519073e-3f;
inline constexpr float kExpC4 = 1.3981999507e-3f;
inline constexpr float kExpC5 = 1.9875691500e-4f;

PC_HOST_DEVICE inline float exp_approx(float x) {
  if (x != x) return x;
  if (x < kExpMin) return 0.0f;
  x = x > kExpMax ? kExpMax : x;
  const float n = rintf(x * kLog2e);
  float r = fmaf(n, -kLn2Hi, x);
  r = fmaf(n, -kLn2Lo, r);
  float p = kExpC5;
  p = fmaf(p, r, kExpC4);
  p = fmaf(p, r, kExpC3);
  p = fmaf(p, r, kExpC2);
  p = fmaf(p, r, kExpC1);
  p = fmaf(p, r, kExpC0);
  const float e = fmaf(p, r * r, r) + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;  // 2^n, n in [-126, 127]
  float scale;
#if defined(__CUDA_ARCH__)
  scale = __int_as_float(bits);
#else
  std::memcpy(&scale, &bits, sizeof scale);
#endif
  return e * scale;
}

// silu(gate) * up, the SwiGLU of the feed-forward block, in this order of operations.
PC_HOST_DEVICE inline float silu_mul_approx(float gate, float up) { return gate / (1.0f + exp_approx(-gate)) * up; }

}  // namespace pagedchat
