// Panels: packing, the scalar reference kernel, expansion, and the choice of a SIMD kernel.
#include "engine/quant/panel/panel.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "engine/common/error.h"
#include "engine/quant/panel/panel_blocks.h"
#include "engine/quant/panel/panel_float.h"
#include "engine/quant/panel/panel_k.h"
#include "engine/quant/panel/panel_legacy.h"
#include "engine/quant/panel/panel_low_bits.h"
#include "engine/quant/panel/panel_pack.h"
#include "engine/quant/quant.h"
#include "engine/quant/quant_avx2.h"
#include "engine/quant/quant_avx512.h"

namespace pagedchat {
namespace {

// What differs between the panel types: the row block, its activation block, and how a row
// block's quants are written into a panel block.
struct Q4_1Panel {
  using Row = block_q4_1;
  using Panel = panel_q4_1;
  using Act = block_q8_1;
  static constexpr bool kHasMin = true;
  static void put(Panel& p, int r, const Row& b) {
    p.d[r] = b.d;
    p.m[r] = b.m;
    for (int c = 0; c < 4; ++c) std::memcpy(&p.q[c][4 * r], b.qs + 4 * c, 4);
  }
};
struct Q8_0Panel {
  using Row = block_q8_0;
  using Panel = panel_q8_0;
  using Act = block_q8_0;
  static constexpr bool kHasMin = false;
  static void put(Panel& p, int r, const Row& b) {
    p.d[r] = b.d;
    for (int c = 0; c < 8; ++c) std::memcpy(&p.q[c][4 * r], b.qs + 4 * c, 4);
  }
};

void check_panel_type(GgmlType type, int64_t cols) {
  if (!panel_supported(type)) {
    fail("tensor type %s has no panel layout", std::string(ggml_type_name(static_cast<uint32_t>(type))).c_str());
  }
  const int block = is_k_panel_type(type) ? kQKK : kQK;
  if (cols <= 0 || cols % block != 0) {
    fail("a panel row of %lld elements is not whole blocks of %d", static_cast<long long>(cols), block);
  }
}

void check_kernel(PanelKernel kernel) {
  static const std::vector<PanelKernel> available = available_panel_kernels();  // checked per call
  for (PanelKernel k : available)
    if (k == kernel) return;
  fail("the %s panel kernel is not available in this build or on this CPU",
       std::string(panel_kernel_name(kernel)).c_str());
}

template <typename F>
void pack(const void* w, size_t row_stride, int64_t rows, int64_t cols, void* dst) {
  pack_panel_rows<typename F::Panel, typename F::Row>(w, row_stride, rows, cols, dst, F::put);
}

// Bytes of an expanded row of num_blocks blocks for `kernel` (panel.h); type and kernel checked.
size_t expanded_row_bytes(GgmlType weight_type, int64_t num_blocks, PanelKernel kernel) {
  // The float kernels read the compact rows (f32); the K-quant ones too, but for the AVX-512
  // kernel's Q4_K and Q5_K, which read their min terms' sums from expanded rows.
  if (is_float_panel_type(weight_type)) return 0;
  const auto nb = static_cast<size_t>(num_blocks);
  if (is_k_panel_type(weight_type)) {
    const bool min_sums = weight_type == GgmlType::Q4_K || weight_type == GgmlType::Q5_K;
    if (kernel != PanelKernel::kAvx512Vnni || !min_sums) return 0;
    return nb * kQK / kQKK * sizeof(vnni_q8_K_min_sums);
  }
  if (is_legacy_panel_type(weight_type)) return kernel == PanelKernel::kScalar ? 0 : nb * sizeof(vnni_q8_0_scales);
  switch (kernel) {
    case PanelKernel::kScalar: return 0;
    case PanelKernel::kAvx2:
      return weight_type == GgmlType::Q4_1 ? expanded_q4_1_scales_at(num_blocks) + nb * 2 * sizeof(float)
                                           : nb * kExpandedQ4_1Block;
    case PanelKernel::kAvx512Vnni:
      return nb * (weight_type == GgmlType::Q4_1 ? sizeof(vnni_q8_1_scales) : sizeof(vnni_q8_0_scales));
  }
  return 0;
}

// The expanded rows a kernel must read (the block scales of the 32-element kinds, the AVX-512 Q4_K
// and Q5_K min sums): the caller's, or, for a caller without them, made here for this call.
const void* needed_expanded_rows(GgmlType weight_type, int64_t cols, const void* act, size_t act_row_bytes,
                                 int64_t num_tokens, const void* expanded, PanelKernel kernel) {
  if (expanded) return expanded;
  thread_local std::vector<uint8_t> own;
  const size_t eb = expanded_row_bytes(weight_type, cols / kQK, kernel);
  own.resize(eb * static_cast<size_t>(num_tokens));
  for (int64_t t = 0; t < num_tokens; ++t)
    expand_for_panels(weight_type, static_cast<const uint8_t*>(act) + t * act_row_bytes, cols, own.data() + eb * t,
                      kernel);
  return own.data();
}

template <typename F>
void reference_dot(int64_t cols, const void* packed, int64_t panel, int64_t num_rows, const void* act,
                   size_t act_row_bytes, int64_t num_tokens, float* out, int64_t out_stride) {
  const int64_t nb = cols / kQK;
  const auto* blocks = static_cast<const typename F::Panel*>(packed) + panel * nb;
  for (int64_t t = 0; t < num_tokens; ++t) {
    const auto* y = reinterpret_cast<const typename F::Act*>(static_cast<const uint8_t*>(act) + t * act_row_bytes);
    for (int64_t r = 0; r < num_rows; ++r) {
      float acc = 0.0f, min = 0.0f;
      for (int64_t i = 0; i < nb; ++i) {
        int32_t s = 0;
        for (int k = 0; k < kQK; ++k) s += panel_quant(blocks[i], static_cast<int>(r), k) * y[i].qs[k];
        const float scale = fp16_to_fp32(blocks[i].d[r]) * fp16_to_fp32(y[i].d);
        acc = std::fma(scale, static_cast<float>(s), acc);
        if constexpr (F::kHasMin) min = std::fma(fp16_to_fp32(blocks[i].m[r]), fp16_to_fp32(y[i].s), min);
      }
      out[t * out_stride + r] = F::kHasMin ? acc + min : acc;
    }
  }
}

}  // namespace

std::vector<PanelKernel> available_panel_kernels() {
  std::vector<PanelKernel> kernels{PanelKernel::kScalar};
#if defined(PAGEDCHAT_QUANT_AVX2)
  static const bool avx2 = quant_avx2::cpu_supported();
  if (avx2) kernels.push_back(PanelKernel::kAvx2);
#endif
#if defined(PAGEDCHAT_QUANT_AVX512)
  static const bool avx512 = quant_avx512::cpu_supported();
  if (avx512) kernels.push_back(PanelKernel::kAvx512Vnni);
#endif
  return kernels;
}

PanelKernel default_panel_kernel() {
  static const PanelKernel chosen = [] {
    const std::vector<PanelKernel> kernels = available_panel_kernels();
    if (const char* name = std::getenv("PAGEDCHAT_PANEL_KERNEL"); name && *name) {
      for (PanelKernel k : kernels)
        if (panel_kernel_name(k) == name) return k;
    }
    return kernels.back();
  }();
  return chosen;
}

std::string_view panel_kernel_name(PanelKernel kernel) {
  switch (kernel) {
    case PanelKernel::kScalar: return "scalar";
    case PanelKernel::kAvx2: return "avx2";
    case PanelKernel::kAvx512Vnni: return "avx512-vnni";
  }
  return "unknown";
}

bool panel_supported(GgmlType weight_type) {
  return weight_type == GgmlType::Q4_1 || weight_type == GgmlType::Q8_0 || is_k_panel_type(weight_type) ||
         is_legacy_panel_type(weight_type) || is_float_panel_type(weight_type);
}

size_t panel_matrix_bytes(GgmlType weight_type, int64_t rows, int64_t cols) {
  check_panel_type(weight_type, cols);
  const int64_t panels = (rows + kPanelRows - 1) / kPanelRows;
  if (is_k_panel_type(weight_type)) return static_cast<size_t>(panels * (cols / kQKK)) * k_panel_block_bytes(weight_type);
  return static_cast<size_t>(panels * kPanelRows) * ggml_row_size(weight_type, cols);
}

void pack_panels(GgmlType weight_type, const void* w, size_t row_stride, int64_t rows, int64_t cols, void* dst) {
  check_panel_type(weight_type, cols);
  if (is_k_panel_type(weight_type)) return pack_k_panels(weight_type, w, row_stride, rows, cols, dst);
  if (is_legacy_panel_type(weight_type)) return pack_legacy_panels(weight_type, w, row_stride, rows, cols, dst);
  if (is_float_panel_type(weight_type)) return pack_float_panels(weight_type, w, row_stride, rows, cols, dst);
  if (weight_type == GgmlType::Q4_1) return pack<Q4_1Panel>(w, row_stride, rows, cols, dst);
  pack<Q8_0Panel>(w, row_stride, rows, cols, dst);
}

size_t panel_expanded_row_bytes(GgmlType weight_type, int64_t cols, PanelKernel kernel) {
  check_panel_type(weight_type, cols);
  check_kernel(kernel);
  return expanded_row_bytes(weight_type, cols / kQK, kernel);
}

bool panel_expansion_pays(GgmlType weight_type, int64_t num_tokens, PanelKernel kernel) {
  if (is_float_panel_type(weight_type)) return false;
  if (is_k_panel_type(weight_type)) return expanded_row_bytes(weight_type, kQKK / kQK, kernel) > 0;  // 16 bytes a super-block
  if (is_legacy_panel_type(weight_type)) return kernel != PanelKernel::kScalar;  // 8 bytes a block
  // AVX2: up to 16 tokens, whose 8x copies (16 rows of 1536 quants: ~390 KB) stay in a core's
  // L2; a longer prefill chunk reads the compact rows.
  if (kernel == PanelKernel::kAvx2) return num_tokens <= 16;
  return kernel == PanelKernel::kAvx512Vnni;
}

void expand_for_panels(GgmlType weight_type, const void* act_row, int64_t cols, void* dst, PanelKernel kernel) {
  check_panel_type(weight_type, cols);
  check_kernel(kernel);
  if (is_float_panel_type(weight_type)) return;
  if (is_k_panel_type(weight_type)) {
    if (expanded_row_bytes(weight_type, cols / kQK, kernel) > 0) expand_k_min_sums(act_row, cols / kQKK, dst);
    return;
  }
  const int64_t nb = cols / kQK;
  auto* out = static_cast<uint8_t*>(dst);
  if (is_legacy_panel_type(weight_type)) {
    if (kernel != PanelKernel::kScalar) expand_vnni_scales(weight_type, act_row, nb, out);
    return;
  }
  switch (kernel) {
    case PanelKernel::kScalar: return;
    case PanelKernel::kAvx2:  // available only where the AVX2 kernel is compiled in
#if defined(PAGEDCHAT_QUANT_AVX2)
      return quant_avx2::expand_for_panels(weight_type, act_row, nb, out);
#else
      return;
#endif
    case PanelKernel::kAvx512Vnni: return expand_vnni_scales(weight_type, act_row, nb, out);
  }
}

void reference::panel_dot(GgmlType weight_type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows,
                          const void* act, size_t act_row_bytes, int64_t num_tokens, float* out, int64_t out_stride) {
  check_panel_type(weight_type, cols);
  if (is_k_panel_type(weight_type)) {
    return reference_k_panel_dot(weight_type, cols, packed, panel, num_rows, act, act_row_bytes, num_tokens, out,
                                 out_stride);
  }
  if (is_legacy_panel_type(weight_type)) {
    return reference_legacy_panel_dot(weight_type, cols, packed, panel, num_rows, act, act_row_bytes, num_tokens, out,
                                      out_stride);
  }
  if (is_float_panel_type(weight_type)) {
    return reference_float_panel_dot(weight_type, cols, packed, panel, num_rows, act, act_row_bytes, num_tokens, out,
                                     out_stride);
  }
  if (weight_type == GgmlType::Q4_1) {
    return reference_dot<Q4_1Panel>(cols, packed, panel, num_rows, act, act_row_bytes, num_tokens, out, out_stride);
  }
  reference_dot<Q8_0Panel>(cols, packed, panel, num_rows, act, act_row_bytes, num_tokens, out, out_stride);
}

void panel_dot(GgmlType weight_type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows,
               const void* act, size_t act_row_bytes, int64_t num_tokens, float* out, int64_t out_stride,
               [[maybe_unused]] const void* expanded, PanelKernel kernel) {
  check_panel_type(weight_type, cols);
  check_kernel(kernel);
  if (is_low_bits_panel_type(weight_type)) {
#if defined(PAGEDCHAT_QUANT_AVX2)
    if (kernel == PanelKernel::kAvx2) {
      return quant_avx2::low_bits_panel_dot(weight_type, cols, packed, panel, num_rows, act, act_row_bytes, num_tokens,
                                            out, out_stride);
    }
#endif
#if defined(PAGEDCHAT_QUANT_AVX512)
    if (kernel == PanelKernel::kAvx512Vnni) {
      return quant_avx512::low_bits_panel_dot(weight_type, cols, packed, panel, num_rows, act, act_row_bytes,
                                              num_tokens, out, out_stride);
    }
#endif
    return reference_low_bits_panel_dot(weight_type, cols, packed, panel, num_rows, act, act_row_bytes, num_tokens,
                                        out, out_stride);
  }
  if (is_k_panel_type(weight_type)) {
#if defined(PAGEDCHAT_QUANT_AVX2)
    if (kernel == PanelKernel::kAvx2) {
      return quant_avx2::k_panel_dot(weight_type, cols, packed, panel, num_rows, act, act_row_bytes, num_tokens, out,
                                     out_stride);
    }
#endif
#if defined(PAGEDCHAT_QUANT_AVX512)
    if (kernel == PanelKernel::kAvx512Vnni) {
      if (expanded_row_bytes(weight_type, cols / kQK, kernel) > 0)  // Q4_K, Q5_K: the min sums
        expanded = needed_expanded_rows(weight_type, cols, act, act_row_bytes, num_tokens, expanded, kernel);
      return quant_avx512::k_panel_dot(weight_type, cols, packed, panel, num_rows, act, act_row_bytes, expanded,
                                       num_tokens, out, out_stride);
    }
#endif
    return reference_k_panel_dot(weight_type, cols, packed, panel, num_rows, act, act_row_bytes, num_tokens, out,
                                 out_stride);
  }
  if (is_float_panel_type(weight_type)) {
#if defined(PAGEDCHAT_QUANT_AVX2)
    if (kernel == PanelKernel::kAvx2) {
      return quant_avx2::float_panel_dot(weight_type, cols, packed, panel, num_rows, act, act_row_bytes, num_tokens,
                                         out, out_stride);
    }
#endif
#if defined(PAGEDCHAT_QUANT_AVX512)
    if (kernel == PanelKernel::kAvx512Vnni) {
      return quant_avx512::float_panel_dot(weight_type, cols, packed, panel, num_rows, act, act_row_bytes, num_tokens,
                                           out, out_stride);
    }
#endif
    return reference_float_panel_dot(weight_type, cols, packed, panel, num_rows, act, act_row_bytes, num_tokens, out,
                                     out_stride);
  }
  if (is_legacy_panel_type(weight_type)) {
    if (kernel == PanelKernel::kScalar) {
      return reference_legacy_panel_dot(weight_type, cols, packed, panel, num_rows, act, act_row_bytes, num_tokens,
                                        out, out_stride);
    }
    // Both SIMD kernels read the block scales from expanded rows.
    expanded = needed_expanded_rows(weight_type, cols, act, act_row_bytes, num_tokens, expanded, kernel);
#if defined(PAGEDCHAT_QUANT_AVX2)
    if (kernel == PanelKernel::kAvx2) {
      return quant_avx2::legacy_panel_dot(weight_type, cols, packed, panel, num_rows, act, act_row_bytes, expanded,
                                          num_tokens, out, out_stride);
    }
#endif
#if defined(PAGEDCHAT_QUANT_AVX512)
    return quant_avx512::legacy_panel_dot(weight_type, cols, packed, panel, num_rows, act, act_row_bytes, expanded,
                                          num_tokens, out, out_stride);
#endif
  }
#if defined(PAGEDCHAT_QUANT_AVX2)
  if (kernel == PanelKernel::kAvx2) {
    return quant_avx2::panel_dot(weight_type, cols, packed, panel, num_rows, act, act_row_bytes, expanded,
                                 expanded_row_bytes(weight_type, cols / kQK, kernel), num_tokens, out, out_stride);
  }
#endif
#if defined(PAGEDCHAT_QUANT_AVX512)
  if (kernel == PanelKernel::kAvx512Vnni) {
    // This kernel always reads the scales from expanded rows.
    expanded = needed_expanded_rows(weight_type, cols, act, act_row_bytes, num_tokens, expanded, kernel);
    return quant_avx512::panel_dot(weight_type, cols, packed, panel, num_rows, act, act_row_bytes, expanded,
                                   num_tokens, out, out_stride);
  }
#endif
  reference::panel_dot(weight_type, cols, packed, panel, num_rows, act, act_row_bytes, num_tokens, out, out_stride);
}

void expand_vnni_scales(GgmlType weight_type, const void* act_row, int64_t num_blocks, void* dst) {
  auto* out = static_cast<uint8_t*>(dst);
  if (weight_type == GgmlType::Q4_1 || weight_type == GgmlType::Q5_1) {
    const auto* y = static_cast<const block_q8_1*>(act_row);
    for (int64_t i = 0; i < num_blocks; ++i) {
      const vnni_q8_1_scales v{fp16_to_fp32(y[i].d), fp16_to_fp32(y[i].s)};
      std::memcpy(out + i * sizeof v, &v, sizeof v);
    }
    return;
  }
  // Q8_0: the kernel's weights are w + 128; Q4_0, Q5_0: the format's offset.
  const int offset = weight_type == GgmlType::Q8_0 ? 128 : legacy_quant_offset(weight_type);
  const auto* y = static_cast<const block_q8_0*>(act_row);
  for (int64_t i = 0; i < num_blocks; ++i) {
    int32_t sum = 0;
    for (int k = 0; k < kQK; ++k) sum += y[i].qs[k];
    const vnni_q8_0_scales v{fp16_to_fp32(y[i].d), -offset * sum};
    std::memcpy(out + i * sizeof v, &v, sizeof v);
  }
}

}  // namespace pagedchat
