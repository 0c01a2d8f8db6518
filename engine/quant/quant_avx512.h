#pragma once
// Internal to engine/quant: the AVX-512 VNNI panel kernels behind panel.h, and whether they exist.
//
// PAGEDCHAT_QUANT_AVX512 is defined on x86-64 with GCC or Clang: panel_avx512.cpp is always
// compiled for AVX-512 F/BW/VL, VNNI and F16C, and panel.cpp picks it at run time when the CPU
// has them. Not even a -march=native build turns VNNI on for the whole engine: GCC 12 vectorizes
// plain integer dot loops into vpdpbusd with the wrong signedness (see CMakeLists.txt).

#include <cstddef>
#include <cstdint>

#include "engine/common/ggml_type.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define PAGEDCHAT_QUANT_AVX512 1
#endif

#if defined(PAGEDCHAT_QUANT_AVX512)
namespace pagedchat::quant_avx512 {

// True when the CPU we run on (and its OS) has AVX-512 F, BW, VL and VNNI.
bool cpu_supported();

// panel.h's panel_dot for the kAvx512Vnni kernel; `expanded` (not null) holds the rows expanded
// for it. The caller has checked the type and cols.
void panel_dot(GgmlType weight_type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows, const void* act,
               size_t act_row_bytes, const void* expanded, int64_t num_tokens, float* out, int64_t out_stride);

// Q4_0, Q5_0, Q5_1 panels (panel_legacy.h); `expanded` (not null) holds the rows' block scales
// (expand_vnni_scales).
void legacy_panel_dot(GgmlType weight_type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows,
                      const void* act, size_t act_row_bytes, const void* expanded, int64_t num_tokens, float* out,
                      int64_t out_stride);
// F16 and BF16 panels (panel_float.h), against f32 activation rows.
void float_panel_dot(GgmlType weight_type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows,
                     const void* act, size_t act_row_bytes, int64_t num_tokens, float* out, int64_t out_stride);
// The same for the K-quant panels (panel_k.h), against compact Q8_K rows; for Q4_K and Q5_K
// `expanded` (not null) holds the rows' min sums (expand_k_min_sums), for Q6_K it is not read.
void k_panel_dot(GgmlType weight_type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows,
                 const void* act, size_t act_row_bytes, const void* expanded, int64_t num_tokens, float* out,
                 int64_t out_stride);

// The low-bit K-quant panels (Q2_K, Q3_K, IQ4_XS: panel_low_bits.h), against compact Q8_K rows.
void low_bits_panel_dot(GgmlType weight_type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows,
                        const void* act, size_t act_row_bytes, int64_t num_tokens, float* out, int64_t out_stride);

}  // namespace pagedchat::quant_avx512
#endif
