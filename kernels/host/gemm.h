#pragma once
// The linear layers through cuBLAS: Y = X W^T with row-major X [n, in] and W [out, in] (the
// GGUF layout, one output feature per row) in the backend's 16-bit type, accumulated and
// written in f32 (cublasGemmEx, CUBLAS_COMPUTE_32F).

#include <cstdint>

#include <cublas_v2.h>

#include "kernels/common/kv_dtype.h"

namespace pagedchat::kernels {

// y: [n, out] f32, row-major. The handle's stream orders it. Throws Error on a cuBLAS failure.
void linear(cublasHandle_t handle, const uint16_t* x, const uint16_t* w, float* y, int64_t n, int64_t in, int64_t out,
            KvDtype dtype);

}  // namespace pagedchat::kernels
