#pragma once
// IEEE half (fp16) and bfloat16 <-> float conversions by bit manipulation, usable from host
// code and CUDA kernels alike (PC_HOST_DEVICE), so every path rounds the same way. No F16C here:
// SIMD code may use the instructions, which give the same results.

#include <cstdint>
#include <cstring>

#ifndef PC_HOST_DEVICE
#if defined(__CUDACC__)
#define PC_HOST_DEVICE __host__ __device__
#else
#define PC_HOST_DEVICE
#endif
#endif

namespace pagedchat {

PC_HOST_DEVICE inline uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

PC_HOST_DEVICE inline float bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

// Exact: every half is a float.
PC_HOST_DEVICE inline float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return bits_float(sign | 0x7f800000u | (mantissa << 13));  // inf, NaN
  if (exponent != 0) return bits_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
  // Zero or subnormal: mantissa * 2^-24, a product of exact values, so exact.
  const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
  return sign ? -magnitude : magnitude;
}

// Round to nearest, ties to even; overflow gives inf, NaN stays a (quiet) NaN.
PC_HOST_DEVICE inline uint16_t fp32_to_fp16(float f) {
  const uint32_t x = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs_x = x & 0x7fffffffu;
  if (abs_x > 0x7f800000u) return sign | 0x7e00u;        // NaN
  if (abs_x >= 0x477ff000u) return sign | 0x7c00u;       // >= 65520 rounds to inf (or is inf)
  if (abs_x >= 0x38800000u) {                            // >= 2^-14: a normal half
    const uint32_t rest = abs_x & 0x1fffu;               // the 13 bits that are dropped
    uint32_t h = ((abs_x >> 23) - 112) << 10 | ((abs_x >> 13) & 0x3ffu);
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry may bump the exponent
    return static_cast<uint16_t>(sign | h);
  }
  if (abs_x <= 0x33000000u) return sign;                 // <= 2^-25 rounds to zero (tie to even)
  // Subnormal half: the result is round(value / 2^-24). value = m * 2^(e - 150).
  const uint32_t e = abs_x >> 23;                        // 102..112 here
  const uint32_t m = (abs_x & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126 - e;                        // 14..24
  uint32_t h = m >> shift;
  const uint32_t rest = m & ((1u << shift) - 1);
  const uint32_t half_way = 1u << (shift - 1);
  if (rest > half_way || (rest == half_way && (h & 1u))) ++h;  // may reach the smallest normal
  return static_cast<uint16_t>(sign | h);
}

PC_HOST_DEVICE inline float bf16_to_fp32(uint16_t b) {
  return bits_float(static_cast<uint32_t>(b) << 16);
}

// Round to nearest even; NaN stays a quiet NaN (as ggml and the gguf package do).
PC_HOST_DEVICE inline uint16_t fp32_to_bf16(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  const uint64_t rounded = static_cast<uint64_t>(x) + 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(rounded >> 16);
}

}  // namespace pagedchat
