#pragma once
// The element types a KV pool may hold, as traits with PC_HOST_DEVICE load/store, so that the
// CPU references and the CUDA kernels convert with the same rounding (round to nearest even).
// F32 exists for the CPU backend's pool (tests read it through a PagedKvView); the CUDA pool
// holds F16 or BF16 only: KV bytes are what decode attention is bound by.

#include <cstdint>

#include "engine/common/float16.h"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace pagedchat::kernels {

enum class KvDtype : uint8_t { F16, BF16 };

inline const char* kv_dtype_name(KvDtype t) { return t == KvDtype::F16 ? "f16" : "bf16"; }

struct KvF16 {
  using storage = uint16_t;
  static constexpr KvDtype dtype = KvDtype::F16;
  PC_HOST_DEVICE static float load(uint16_t h) {
#if defined(__CUDA_ARCH__)
    return __half2float(__ushort_as_half(h));  // exact, like fp16_to_fp32
#else
    return fp16_to_fp32(h);
#endif
  }
  PC_HOST_DEVICE static uint16_t store(float f) {
#if defined(__CUDA_ARCH__)
    return __half_as_ushort(__float2half_rn(f));  // RNE, like fp32_to_fp16
#else
    return fp32_to_fp16(f);
#endif
  }
};

struct KvBf16 {
  using storage = uint16_t;
  static constexpr KvDtype dtype = KvDtype::BF16;
  PC_HOST_DEVICE static float load(uint16_t b) { return bf16_to_fp32(b); }  // a shift on both sides
  PC_HOST_DEVICE static uint16_t store(float f) { return fp32_to_bf16(f); }
};

struct KvF32 {
  using storage = float;
  PC_HOST_DEVICE static float load(float f) { return f; }
  PC_HOST_DEVICE static float store(float f) { return f; }
};

}  // namespace pagedchat::kernels
