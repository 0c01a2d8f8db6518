#pragma once
// Dequantization of GGUF weight rows on the GPU (to f32), sharing the per-element math of
// engine/quant/quant_blocks.h with the CPU reference. The CUDA backend expands every weight
// matrix to 16 bits with it once at load (device_weights.cpp), for cuBLAS.

#include <cstdint>

#include <cuda_runtime.h>

#include "engine/common/ggml_type.h"
#include "kernels/common/kv_dtype.h"

namespace pagedchat::cuda {

// src: [num_rows, row_bytes] blocks of `type`; dst: [num_rows, cols] f32. Throws Error for a
// type the kernel does not handle, or on a launch failure.
void dequantize_rows_f32(GgmlType type, const void* src, float* dst, int64_t num_rows, int64_t cols,
                         cudaStream_t stream);

// The same into 16 bits: each element dequantized to f32 as above, then rounded to nearest
// even into dtype (f16 or bf16). dst: [num_rows, cols].
void dequantize_rows_16(GgmlType type, const void* src, uint16_t* dst, kernels::KvDtype dtype, int64_t num_rows,
                        int64_t cols, cudaStream_t stream);

// The GPU device count (0 when there is no device or no driver); never throws.
int device_count();

}  // namespace pagedchat::cuda
