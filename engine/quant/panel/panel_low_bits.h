#pragma once
// Internal to engine/quant: the panels of the low-bit K-quants Q2_K, Q3_K and IQ4_XS behind
// panel.h (reached through panel_k.h, whose super-blocks and Q8_K activations they share): their
// packing and the scalar reference that defines their math. Layouts: panel_blocks.h.
//
// Math, per (row, token) and per super-block i, with the activation in Q8_K (d_a a float, the
// quants a, and the sums of each 16 of them):
//   Q2_K:   sumi = sum over groups g (16) of scale_g * (q . a)_g               (exact integers)
//           summ = sum over g of min_g * (the sum of a over g)
//           acc  = fma(d_w * d_a, float(sumi), acc);  mn = fma(dmin_w * d_a, float(summ), mn)
//           out  = acc - mn
//   Q3_K:   sumi = sum over g of scale_g * ((q . a)_g - 4 * (the sum of a over g)), q unsigned
//   IQ4_XS: sumi = sum over sub-blocks s (32) of scale_s * (level(q) . a)_s
//           acc  = fma(d_w * d_a, float(sumi), acc);  out = acc
// acc and mn start at 0 and take the super-blocks in order. Kernels may form the exact integer
// sums any way they like (the AVX-512 one multiplies IQ4_XS's levels + 128 as unsigned bytes and
// takes 128 x the sums back); the float steps are these, in this order.

#include <cstddef>
#include <cstdint>

#include "engine/common/ggml_type.h"

namespace pagedchat {

bool is_low_bits_panel_type(GgmlType type);
// Bytes of one panel block (16 rows of one super-block).
size_t low_bits_panel_block_bytes(GgmlType type);
void pack_low_bits_panels(GgmlType type, const void* w, size_t row_stride, int64_t rows, int64_t cols, void* dst);
void reference_low_bits_panel_dot(GgmlType type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows,
                                  const void* act, size_t act_row_bytes, int64_t num_tokens, float* out,
                                  int64_t out_stride);

}  // namespace pagedchat
