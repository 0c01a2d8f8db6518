#pragma once
// Weight matrices repacked in panels of 16 rows for the CPU matmul.
//
// A row-major quantized matrix makes every output element its own dot product: each 32-element
// block is unpacked, multiplied with the activation block, and its 8 partial sums scaled and
// accumulated, for every row. In a panel the same block of 16 rows is stored interleaved (a few
// elements of each of 8 rows per 32-byte vector, panel_blocks.h), so one 8-bit multiply
// instruction serves 8 rows at once against broadcast activations, and the partial sums stay in
// one integer vector until the block's end. On the machines we measured this is 2-3x the speed
// of vec_dot_rows for the same math (see docs/benchmarks.md), for one token as well as for a
// batch.
//
// Math, per (row, token) and per block i, the same whatever the batch or the panel range:
//   S_i   = sum of q * y over the block's 32 elements (exact integers)
//   acc   = fma(d_w * d_a, float(S_i), acc)        acc starts at 0, blocks in order
//   min   = fma(m_w, s_a, min)                      (Q4_1: weight minimum x activation sum)
//   out   = acc + min                               (Q8_0: out = acc)
// The reference below computes exactly this with scalar floats, so the SIMD path must give
// the same bits (tested), and a row's result never depends on the other tokens in the call.
//
// Supported: Q4_1 (against Q8_1 activations, as vec_dot) and Q8_0 (against Q8_0). Other types
// keep using vec_dot_rows.

#include <cstddef>
#include <cstdint>

#include "engine/common/ggml_type.h"

namespace pagedchat {

inline constexpr int64_t kPanelRows = 16;

bool panel_supported(GgmlType weight_type);
// Bytes of the panels of a rows x cols matrix (the last panel padded with zero rows).
size_t panel_matrix_bytes(GgmlType weight_type, int64_t rows, int64_t cols);
// Repacks a row-major matrix (rows `row_stride` bytes apart) into dst (panel_matrix_bytes).
// Throws Error for an unsupported type or a cols that splits a block.
void pack_panels(GgmlType weight_type, const void* w, size_t row_stride, int64_t rows, int64_t cols, void* dst);

// An activation row expanded for panel_dot: each quad of its quants that a multiply takes
// (Q4_1: a pair from each half of a block, see panel_blocks.h; Q8_0: 4 in a row) repeated
// across 32 bytes, so the kernel loads what it would otherwise broadcast, and for Q4_1 the
// block scales as floats. 8x the quants' bytes: worth it for a few tokens (a decode step), not
// for a long prefill chunk, whose expanded rows would not stay in cache. Results are the same
// bits either way.
size_t panel_expanded_row_bytes(GgmlType weight_type, int64_t cols);
void expand_for_panels(GgmlType weight_type, const void* act_row, int64_t cols, void* dst);

// For panel p of a packed matrix and each of num_tokens activation rows (prepared with
// quantize_activation_row for weight_type, act_row_bytes apart): out[t * out_stride + r] =
// row (16 p + r) . activation t, for r < num_rows (<= 16; the rest of the panel is padding).
// `expanded`, when given, holds the same rows expanded (panel_expanded_row_bytes apart).
void panel_dot(GgmlType weight_type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows,
               const void* act, size_t act_row_bytes, int64_t num_tokens, float* out, int64_t out_stride,
               const void* expanded = nullptr);

namespace reference {
// The same, one element at a time in scalar code: the definition the fast path must equal.
void panel_dot(GgmlType weight_type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows,
               const void* act, size_t act_row_bytes, int64_t num_tokens, float* out, int64_t out_stride);
}  // namespace reference

}  // namespace pagedchat
