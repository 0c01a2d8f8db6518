#pragma once
// Small device helpers the attention kernels share: a 16-byte load of 8 KV elements converted
// to float, and warp reductions. Device-only (included by .cu files).

#include <cstdint>

#include "kernels/common/kv_dtype.h"

namespace pagedchat::kernels {

// 8 consecutive 16-bit KV elements at p (16-byte aligned: head_dim % 8 == 0 and row starts
// on multiples of head_dim) -> out[0..8).
template <typename KV>
__device__ __forceinline__ void load8(const uint16_t* __restrict__ p, float (&out)[8]) {
  const uint4 raw = *reinterpret_cast<const uint4*>(p);
  const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    out[2 * i] = KV::load(static_cast<uint16_t>(w[i] & 0xffffu));
    out[2 * i + 1] = KV::load(static_cast<uint16_t>(w[i] >> 16));
  }
}

__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

}  // namespace pagedchat::kernels
