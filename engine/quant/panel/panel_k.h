#pragma once
// Internal to engine/quant: the K-quant panels (Q4_K, Q5_K, Q6_K) behind panel.h: their packing and
// the scalar reference that defines their math. Layouts: panel_blocks.h. The functions below also
// take the low-bit K-quants Q2_K, Q3_K and IQ4_XS (same super-blocks, same Q8_K activations),
// whose math panel_low_bits.h states.
//
// Math, per (row, token) and per super-block i, with the activation in Q8_K (d_a a float, the
// quants q_a, and the sums of each 16 of them):
//   Q4_K, Q5_K: sumi = sum over sub-blocks s of scale_s * (q . q_a)_s           (exact integers)
//         summ = sum over s of min_s * (the sum of q_a over sub-block s)  (exact integers)
//         acc  = fma(d_w * d_a, float(sumi), acc);  mn = fma(dmin_w * d_a, float(summ), mn)
//         out  = acc - mn
//   Q6_K: sumi = sum over groups g of scale_g * ((q . q_a)_g - 32 * (sum of q_a)_g), q unsigned
//         acc  = fma(d_w * d_a, float(sumi), acc);  out = acc
// acc and mn start at 0 and take the super-blocks in order.

#include <cstddef>
#include <cstdint>

#include "engine/common/ggml_type.h"

namespace pagedchat {

bool is_k_panel_type(GgmlType type);
// Bytes of one panel block (16 rows of one super-block).
size_t k_panel_block_bytes(GgmlType type);
void pack_k_panels(GgmlType type, const void* w, size_t row_stride, int64_t rows, int64_t cols, void* dst);
void reference_k_panel_dot(GgmlType type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows,
                           const void* act, size_t act_row_bytes, int64_t num_tokens, float* out, int64_t out_stride);

}  // namespace pagedchat
