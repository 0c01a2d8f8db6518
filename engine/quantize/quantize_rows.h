#pragma once
// Float rows into a weight type's blocks: what writing a quantized model file does to each
// tensor. Every type rounds as llama.cpp's quantize_<type> does (its reference functions, and
// with an importance matrix its weighted ones), so our output and llama-quantize's are the
// same bytes (tests/engine/quantize/test_quantize_rows.cpp checks against ggml's own output).
//
// `importance` (optional) holds row_length non-negative weights, one per column: how much an
// error in that input channel costs (the mean square of the activations it meets, from an
// importance matrix). Every row of the call uses the same weights. F32, F16, BF16, Q8_0 and
// MXFP4 have no use for them.

#include <cstdint>
#include <limits>

#include "engine/common/ggml_type.h"

namespace pagedchat::quantize {

// Whether a type is a quantized one (not F32, F16 or BF16).
inline bool is_quantized(GgmlType t) { return t != GgmlType::F32 && t != GgmlType::F16 && t != GgmlType::BF16; }

// Whether quantize_rows can write this type (F32, F16, BF16, the legacy types, Q2_K-Q6_K,
// IQ4_NL, IQ4_XS, MXFP4).
bool can_write(GgmlType type);

// dst: rows * ggml_row_size(type, row_length) bytes. row_length must be a multiple of the
// type's block size, src finite. Rows are independent: splitting a call by rows gives the
// same bytes.
void quantize_rows(GgmlType type, const float* src, void* dst, int64_t rows, int64_t row_length,
                   const float* importance = nullptr);

// One row of each family (quantize_rows dispatches to them).
// sigma2: the mean square of the whole row the n values belong to, when they are a part of it
// (a GPTQ-style pass rounds a row a block at a time: gptq.h); NaN: the n values are the row.
void quantize_legacy_row(GgmlType type, const float* x, void* dst, int64_t n, const float* importance,
                         float sigma2 = std::numeric_limits<float>::quiet_NaN());
// Whether a type is one of the legacy 32-element types whose weighted rounding reads the whole
// row's mean square (Q4_0, Q4_1, Q5_0, Q5_1).
bool uses_row_mean_square(GgmlType type);
void quantize_k_row(GgmlType type, const float* x, void* dst, int64_t n, const float* importance);
void quantize_nonlinear_row(GgmlType type, const float* x, void* dst, int64_t n, const float* importance);

}  // namespace pagedchat::quantize
