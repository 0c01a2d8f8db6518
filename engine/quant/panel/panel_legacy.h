#pragma once
// Internal to engine/quant: the panels of the other 32-element types, Q4_0, Q5_0, IQ4_NL, MXFP4
// (against Q8_0 activations) and Q5_1 (against Q8_1), behind panel.h: packing, and the scalar
// reference that defines their math. Layouts: panel_blocks.h.
//
// Math, per (row, token) and per block i, with q the unsigned quants and a the activation's:
//   S   = sum of q * a - offset * sum of a       offset 8 (Q4_0), 16 (Q5_0), 0 (Q5_1); exact
//   S   = sum of level(q) * a                    IQ4_NL, MXFP4 (the format's 16 levels); exact
//   acc = fma(d_w * d_a, float(S), acc)          d_w: MXFP4's 2^(e - 128)
//   min = fma(m_w, s_a, min)                      (Q5_1 only, as Q4_1)
//   out = acc + min                               (Q4_0, Q5_0: out = acc)
// Both SIMD kernels read each activation block's d_a and, for Q4_0/Q5_0, -offset x its quants'
// sum (Q5_1: s_a) from the expanded row (vnni_q8_0_scales / vnni_q8_1_scales, panel_blocks.h).
// The level types' offset is 128: the AVX-512 kernel multiplies level + 128 as unsigned bytes
// and takes 128 x the sum back; the AVX2 one multiplies the signed levels (byte sign trick)
// and reads no offset.

#include <cstddef>
#include <cstdint>

#include "engine/common/ggml_type.h"

namespace pagedchat {

bool is_legacy_panel_type(GgmlType type);
// IQ4_NL and MXFP4: nibbles that index a table of levels.
bool is_level_panel_type(GgmlType type);
// The format's offset of the unsigned quants (8, 16, or 0 for a type with a minimum; 128 for
// the level types, whose AVX-512 kernel adds it to the levels).
int legacy_quant_offset(GgmlType type);
void pack_legacy_panels(GgmlType type, const void* w, size_t row_stride, int64_t rows, int64_t cols, void* dst);
void reference_legacy_panel_dot(GgmlType type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows,
                                const void* act, size_t act_row_bytes, int64_t num_tokens, float* out,
                                int64_t out_stride);

}  // namespace pagedchat
