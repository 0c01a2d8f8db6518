#pragma once
// Internal to engine/quant: the panels of the 16-bit float types, F16 and BF16, behind panel.h:
// packing, and the scalar reference that defines their math. Layout: panel_blocks.h
// (panel_f16, 32 columns a block). Activations stay f32 (quant.h's dot_activation_type).
//
// Math, per (row, token): two float chains over the columns, k even and k odd, each
//   acc_j = fma(w_k, x_k, acc_j)   in column order, from 0
//   out   = acc_0 + acc_1
// Two chains, not one: a single token's row is then two independent fma chains, which the SIMD
// kernels need to keep the multiply-add units busy during a decode step.

#include <cstddef>
#include <cstdint>

#include "engine/common/ggml_type.h"

namespace pagedchat {

bool is_float_panel_type(GgmlType type);
void pack_float_panels(GgmlType type, const void* w, size_t row_stride, int64_t rows, int64_t cols, void* dst);
void reference_float_panel_dot(GgmlType type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows,
                               const void* act, size_t act_row_bytes, int64_t num_tokens, float* out,
                               int64_t out_stride);

}  // namespace pagedchat
