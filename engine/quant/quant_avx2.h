#pragma once
// Internal to engine/quant: the AVX2+FMA+F16C paths behind quant.h, and whether they exist.
//
// PAGEDCHAT_QUANT_AVX2 is 1 when the whole build targets AVX2/FMA/F16C (-march=native on such
// a CPU), 2 when a portable x86-64 build compiles these files for AVX2 anyway and quant.cpp
// picks them at run time (PAGEDCHAT_RUNTIME_DISPATCH), and undefined otherwise (scalar only).

#include <cstddef>
#include <cstdint>

#include "engine/common/ggml_type.h"
#include "engine/quant/quant.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define PAGEDCHAT_QUANT_AVX2 1
#elif defined(PAGEDCHAT_RUNTIME_DISPATCH) && defined(__x86_64__) && defined(__GNUC__)
#define PAGEDCHAT_QUANT_AVX2 2
#endif

#if defined(PAGEDCHAT_QUANT_AVX2)
namespace pagedchat::quant_avx2 {

// True when the CPU we run on has AVX2, FMA and F16C.
bool cpu_supported();

// Same contracts as the functions of the same names in quant.h; callers have checked the type
// and that n is a multiple of its block size.
void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n);
void quantize_activation_row(GgmlType weight_type, const float* x, void* dst, int64_t n);
void vec_dot_rows(GgmlType weight_type, int64_t n, const void* w, size_t weight_row_stride,
                  int64_t num_rows, const void* activation_row, float* out, WeightAccess access);
// Whether vec_dot_rows has a kernel for the type (the others run the scalar reference).
bool has_vec_dot(GgmlType weight_type);
// vec_dot_rows for Q2_K, Q3_K, IQ4_NL, IQ4_XS and MXFP4 (vec_dot_low_bits_avx2.cpp).
void vec_dot_rows_low_bits(GgmlType weight_type, int64_t n, const void* w, size_t weight_row_stride, int64_t num_rows,
                           const void* activation_row, float* out, WeightAccess access);
// panel.h's panel_dot; the caller has checked the type and cols.
void panel_dot(GgmlType weight_type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows, const void* act,
               size_t act_row_bytes, const void* expanded, size_t expanded_row_bytes, int64_t num_tokens, float* out,
               int64_t out_stride);
// The same for the K-quant panels (panel_k.h), which read the compact Q8_K rows only.
void k_panel_dot(GgmlType weight_type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows,
                 const void* act, size_t act_row_bytes, int64_t num_tokens, float* out, int64_t out_stride);
// The low-bit K-quant panels (Q2_K, Q3_K, IQ4_XS: panel_low_bits.h), against compact Q8_K rows.
void low_bits_panel_dot(GgmlType weight_type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows,
                        const void* act, size_t act_row_bytes, int64_t num_tokens, float* out, int64_t out_stride);
// Q4_0, Q5_0, Q5_1 panels (panel_legacy.h); `expanded` (not null) holds the rows' block scales
// (expand_vnni_scales).
void legacy_panel_dot(GgmlType weight_type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows,
                      const void* act, size_t act_row_bytes, const void* expanded, int64_t num_tokens, float* out,
                      int64_t out_stride);
// F16 and BF16 panels (panel_float.h), against f32 activation rows.
void float_panel_dot(GgmlType weight_type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows,
                     const void* act, size_t act_row_bytes, int64_t num_tokens, float* out, int64_t out_stride);
// panel.h's expand_for_panels for the AVX2 kernel (num_blocks blocks).
void expand_for_panels(GgmlType weight_type, const void* act_row, int64_t num_blocks, void* dst);

}  // namespace pagedchat::quant_avx2
#endif
