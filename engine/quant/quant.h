#pragma once
// Tensor formats on the CPU: dequantization, and the dot products the matmuls are made of.
// A weight row of type T is multiplied with an activation row that was first converted into
// dot_activation_type(T) (Q8_0, Q8_1 or Q8_K blocks for quantized weights; F32 for float
// weights), as llama.cpp does, so the inner loop is integer math.
//
// Determinism: vec_dot and vec_dot_rows give the same bits for a (weight row, activation row)
// pair whatever other rows are computed with it, so a sequence's logits do not depend on the
// batch it runs in.
//
// Supported weight types: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K,
// Q6_K, IQ4_NL, IQ4_XS, MXFP4 (Q2_K, Q3_K, IQ4_NL, IQ4_XS and MXFP4 have AVX2 vec_dot kernels
// but no panels). Any
// other type, or an n that is not a multiple of the type's block size, throws Error (both come
// from a model file). Block layouts and per-block math: quant_blocks.h.

#include <cstddef>
#include <cstdint>

#include "engine/common/ggml_type.h"

namespace pagedchat {

// Dequantizes n elements (a multiple of the block size) of a row of `type` into floats.
void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n);

// The layout an activation row must be in for vec_dot with weights of `weight_type`.
GgmlType dot_activation_type(GgmlType weight_type);
// Bytes of an activation row of n elements prepared for `weight_type`.
size_t activation_row_size(GgmlType weight_type, int64_t n);
// Converts n floats into that layout (a copy for float weights). x must be finite. Per block:
// d = max|x| / 127, q = round-to-even(x / d); Q8_0/Q8_1 keep d as fp16 (see quant_blocks.h).
void quantize_activation_row(GgmlType weight_type, const float* x, void* dst, int64_t n);

// Dot product of one weight row with one prepared activation row (n elements).
float vec_dot(GgmlType weight_type, int64_t n, const void* weight_row, const void* activation_row);
// Where the weight rows of a vec_dot_rows call are expected to come from: streaming from
// memory (decode reads each matrix once per step: prefetching the next rows pays) or already
// in cache (prefill reuses a task's rows for many tokens: prefetching costs up to a quarter of
// the speed, see vec_dot_avx2.cpp). kAuto guesses from the size of the call (>= 64 KB:
// streaming). Results are identical either way.
enum class WeightAccess { kAuto, kStreaming, kCached };

// out[r] = vec_dot(row r of w, act) for r in [0, num_rows); rows are weight_row_stride bytes
// apart (any address, any stride). Faster than calling vec_dot per row, with identical results.
void vec_dot_rows(GgmlType weight_type, int64_t n, const void* w, size_t weight_row_stride,
                  int64_t num_rows, const void* activation_row, float* out,
                  WeightAccess access = WeightAccess::kAuto);

// Which SIMD path is compiled in and selected ("avx2", "scalar").
const char* quant_simd_name();

namespace reference {
// Plain scalar C++ versions, written for clarity; the tests check the fast paths against them.
void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n);
void quantize_activation_row(GgmlType weight_type, const float* x, void* dst, int64_t n);
float vec_dot(GgmlType weight_type, int64_t n, const void* weight_row, const void* activation_row);
}  // namespace reference

}  // namespace pagedchat
