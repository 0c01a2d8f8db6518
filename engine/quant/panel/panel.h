#pragma once
// Weight matrices repacked in panels of 16 rows for the CPU matmul.
//
// A row-major quantized matrix makes every output element its own dot product: each 32-element
// block is unpacked, multiplied with the activation block, and its 8 partial sums scaled and
// accumulated, for every row. In a panel the same block of 16 rows is stored interleaved (4
// bytes of each row side by side, panel_blocks.h), so one 8-bit multiply instruction serves 8
// rows (AVX2) or 16 (AVX-512) at once against broadcast activations, and the partial sums stay
// in one integer vector until the block's end. On the machines we measured this is 2-3x the speed
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
// Supported: Q4_1 (against Q8_1 activations, as vec_dot) and Q8_0 (against Q8_0), with the math
// above; Q4_0, Q5_0, Q5_1, IQ4_NL and MXFP4 (panel_legacy.h); F16 and BF16 against f32
// activations (panel_float.h); and the K-quants Q4_K, Q5_K, Q6_K (panel_k.h) and Q2_K, Q3_K,
// IQ4_XS (panel_low_bits.h) against Q8_K, whose 256-element super-blocks have their own layouts.
// Each of those headers states its math. F32 keeps using vec_dot_rows.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/common/ggml_type.h"

namespace pagedchat {

inline constexpr int64_t kPanelRows = 16;

bool panel_supported(GgmlType weight_type);
// Bytes of the panels of a rows x cols matrix (the last panel padded with zero rows).
size_t panel_matrix_bytes(GgmlType weight_type, int64_t rows, int64_t cols);
// Repacks a row-major matrix (rows `row_stride` bytes apart) into dst (panel_matrix_bytes).
// Throws Error for an unsupported type or a cols that splits a block.
void pack_panels(GgmlType weight_type, const void* w, size_t row_stride, int64_t rows, int64_t cols, void* dst);

// The SIMD kernels behind panel_dot. Each gives the reference's bits; they differ in speed and
// in the expanded rows they read (below).
enum class PanelKernel {
  kScalar,      // the reference itself
  kAvx2,        // AVX2 byte-pair multiplies (vpmaddubsw), 8 rows a vector
  kAvx512Vnni,  // AVX-512 4-way byte dots (vpdpbusd), 16 rows a vector
};
// The kernels this build can run on this CPU, kScalar first and the fastest last.
std::vector<PanelKernel> available_panel_kernels();
// The fastest of them: what every function here uses unless told otherwise. The environment's
// PAGEDCHAT_PANEL_KERNEL (scalar, avx2, avx512-vnni) names another available one instead, so a
// benchmark can measure a slower CPU's path (an AVX2-only machine's) on this one.
PanelKernel default_panel_kernel();
std::string_view panel_kernel_name(PanelKernel kernel);

// An activation row expanded for one kernel's panel_dot (prepared with quantize_activation_row
// first). kAvx2: each quad of quants that a multiply takes (4 in a row) repeated across 32
// bytes, so the kernel loads what it would otherwise broadcast, and for Q4_1 the block scales
// as floats: 8x the quants' bytes, worth it for a few tokens (a decode step) but not for a long
// prefill chunk, whose expanded rows would not stay in cache. kAvx512Vnni: per block the
// activation scale as a float and, for Q4_1, the sum term s as a float, for Q8_0 -128 times the
// quants' sum (the kernel multiplies weights + 128 as unsigned bytes); 8 bytes a block, worth it
// always; for Q4_K and Q5_K the sums of each 32 quants in 16-bit pairs, 16 bytes a super-block
// (Q6_K and the low-bit K-quants: none). kScalar reads none (0 bytes). Results are the same bits
// with or without.
// Throws Error for a kernel that is not available.
size_t panel_expanded_row_bytes(GgmlType weight_type, int64_t cols, PanelKernel kernel = default_panel_kernel());
void expand_for_panels(GgmlType weight_type, const void* act_row, int64_t cols, void* dst,
                       PanelKernel kernel = default_panel_kernel());
// Whether a call with num_tokens activation rows should pass them expanded.
// (Never for the float types, Q6_K and the low-bit K-quants, and for Q4_K and Q5_K only with
// kAvx512Vnni: the other kernels read the compact rows.)
bool panel_expansion_pays(GgmlType weight_type, int64_t num_tokens, PanelKernel kernel = default_panel_kernel());

// For panel p of a packed matrix and each of num_tokens activation rows (prepared with
// quantize_activation_row for weight_type, act_row_bytes apart): out[t * out_stride + r] =
// row (16 p + r) . activation t, for r < num_rows (<= 16; the rest of the panel is padding).
// `expanded`, when given, holds the same rows expanded for `kernel`
// (panel_expanded_row_bytes apart).
void panel_dot(GgmlType weight_type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows,
               const void* act, size_t act_row_bytes, int64_t num_tokens, float* out, int64_t out_stride,
               const void* expanded = nullptr, PanelKernel kernel = default_panel_kernel());

namespace reference {
// The same, one element at a time in scalar code: the definition the fast path must equal.
void panel_dot(GgmlType weight_type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows,
               const void* act, size_t act_row_bytes, int64_t num_tokens, float* out, int64_t out_stride);
}  // namespace reference

}  // namespace pagedchat
