#pragma once
// Dequantization of GGUF weight rows on the GPU (to f32), sharing the per-element math of
// engine/quant/quant_blocks.h with the CPU reference. Meant for the CUDA backend (a later
// issue) to expand quantized weights for cuBLAS at load time; nothing links it yet, and its
// check against the CPU reference needs a GPU machine.

#include <cstdint>

#include <cuda_runtime.h>

#include "engine/common/ggml_type.h"

namespace pagedchat::cuda {

// src: [num_rows, row_bytes] blocks of `type`; dst: [num_rows, cols] f32. Throws Error for a
// type the kernel does not handle, or on a launch failure.
void dequantize_rows_f32(GgmlType type, const void* src, float* dst, int64_t num_rows, int64_t cols,
                         cudaStream_t stream);

// The GPU device count (0 when there is no device or no driver); never throws.
int device_count();

}  // namespace pagedchat::cuda
