// Panels: packing, the scalar reference kernel, and the choice of the AVX2 kernel.
#include "engine/quant/panel.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "engine/common/error.h"
#include "engine/quant/panel_blocks.h"
#include "engine/quant/quant.h"
#include "engine/quant/quant_avx2.h"

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
    for (int k = 0; k < kQK; ++k) {
      const int h = k / 16, j = (k % 16) / 4, high = (k / 2) % 2, e = k % 2;
      p.q[r / 8][j][4 * (r % 8) + 2 * h + e] |= static_cast<uint8_t>(quant_q4_1(b, k) << (4 * high));
    }
  }
};
struct Q8_0Panel {
  using Row = block_q8_0;
  using Panel = panel_q8_0;
  using Act = block_q8_0;
  static constexpr bool kHasMin = false;
  static void put(Panel& p, int r, const Row& b) {
    p.d[r] = b.d;
    for (int k = 0; k < kQK; ++k) p.q[r / 8][k / 4][4 * (r % 8) + k % 4] = b.qs[k];
  }
};

void check_panel_type(GgmlType type, int64_t cols) {
  if (!panel_supported(type)) {
    fail("tensor type %s has no panel layout", std::string(ggml_type_name(static_cast<uint32_t>(type))).c_str());
  }
  if (cols <= 0 || cols % kQK != 0) fail("a panel row of %lld elements is not whole blocks of 32", static_cast<long long>(cols));
}

// Q8_0: quads of quants repeated across 32 bytes (Q4_1 has its own layout, panel_blocks.h).
constexpr int kQ8_0Group = 4;

template <typename F>
void pack(const void* w, size_t row_stride, int64_t rows, int64_t cols, void* dst) {
  const int64_t nb = cols / kQK;
  const int64_t panels = (rows + kPanelRows - 1) / kPanelRows;
  auto* out = static_cast<typename F::Panel*>(dst);
  for (int64_t p = 0; p < panels; ++p) {
    for (int64_t i = 0; i < nb; ++i) {
      typename F::Panel& pb = out[p * nb + i];
      std::memset(&pb, 0, sizeof pb);  // padding rows: zero scales and quants
      for (int r = 0; r < kPanelRows && p * kPanelRows + r < rows; ++r) {
        typename F::Row b;
        std::memcpy(&b, static_cast<const uint8_t*>(w) + (p * kPanelRows + r) * row_stride + i * sizeof b, sizeof b);
        F::put(pb, r, b);
      }
    }
  }
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

bool panel_supported(GgmlType weight_type) {
  return weight_type == GgmlType::Q4_1 || weight_type == GgmlType::Q8_0;
}

size_t panel_matrix_bytes(GgmlType weight_type, int64_t rows, int64_t cols) {
  check_panel_type(weight_type, cols);
  const int64_t panels = (rows + kPanelRows - 1) / kPanelRows;
  return static_cast<size_t>(panels * kPanelRows) * ggml_row_size(weight_type, cols);
}

void pack_panels(GgmlType weight_type, const void* w, size_t row_stride, int64_t rows, int64_t cols, void* dst) {
  check_panel_type(weight_type, cols);
  if (weight_type == GgmlType::Q4_1) return pack<Q4_1Panel>(w, row_stride, rows, cols, dst);
  pack<Q8_0Panel>(w, row_stride, rows, cols, dst);
}

size_t panel_expanded_row_bytes(GgmlType weight_type, int64_t cols) {
  check_panel_type(weight_type, cols);
  const int64_t nb = cols / kQK;
  if (weight_type == GgmlType::Q4_1) return expanded_q4_1_scales_at(nb) + static_cast<size_t>(nb) * 2 * sizeof(float);
  return static_cast<size_t>(cols) * (32 / kQ8_0Group);  // 32 bytes per quad
}

void expand_for_panels(GgmlType weight_type, const void* act_row, int64_t cols, void* dst) {
  check_panel_type(weight_type, cols);
  const int64_t nb = cols / kQK;
  auto* out = static_cast<uint8_t*>(dst);
  // Filled as whole 32-bit words, which the compiler turns into a broadcast and a store.
  auto spread = [&out](uint32_t word) {
    uint32_t lanes[8];
    std::fill_n(lanes, 8, word);
    std::memcpy(out, lanes, 32);
    out += 32;
  };
  if (weight_type == GgmlType::Q4_1) {
#if defined(PAGEDCHAT_QUANT_AVX2)
    static const bool avx2 = quant_avx2::cpu_supported();
    if (avx2) return quant_avx2::expand_q4_1(act_row, nb, dst);
#endif
    const auto* y = static_cast<const block_q8_1*>(act_row);
    float* scales = reinterpret_cast<float*>(out + expanded_q4_1_scales_at(nb));  // d, s per block
    for (int64_t i = 0; i < nb; ++i) {
      for (int v = 0; v < 8; ++v) {
        const int k = 4 * (v / 2) + 2 * (v % 2);  // the pair of half 0; half 1's is 16 further
        uint16_t first, second;
        std::memcpy(&first, y[i].qs + k, 2);
        std::memcpy(&second, y[i].qs + 16 + k, 2);
        spread(first | static_cast<uint32_t>(second) << 16);
      }
      const float ds[2] = {fp16_to_fp32(y[i].d), fp16_to_fp32(y[i].s)};
      std::memcpy(scales + 2 * i, ds, sizeof ds);
    }
    return;
  }
  const auto* y = static_cast<const block_q8_0*>(act_row);
  for (int64_t i = 0; i < nb; ++i) {
    for (int k = 0; k < kQK; k += kQ8_0Group) {
      uint32_t quad;
      std::memcpy(&quad, y[i].qs + k, 4);
      spread(quad);
    }
  }
}

void reference::panel_dot(GgmlType weight_type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows,
                          const void* act, size_t act_row_bytes, int64_t num_tokens, float* out, int64_t out_stride) {
  check_panel_type(weight_type, cols);
  if (weight_type == GgmlType::Q4_1) {
    return reference_dot<Q4_1Panel>(cols, packed, panel, num_rows, act, act_row_bytes, num_tokens, out, out_stride);
  }
  reference_dot<Q8_0Panel>(cols, packed, panel, num_rows, act, act_row_bytes, num_tokens, out, out_stride);
}

void panel_dot(GgmlType weight_type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows,
               const void* act, size_t act_row_bytes, int64_t num_tokens, float* out, int64_t out_stride,
               [[maybe_unused]] const void* expanded) {
#if defined(PAGEDCHAT_QUANT_AVX2)
  static const bool avx2 = quant_avx2::cpu_supported();
  if (avx2) {
    check_panel_type(weight_type, cols);
    return quant_avx2::panel_dot(weight_type, cols, packed, panel, num_rows, act, act_row_bytes, expanded,
                                 panel_expanded_row_bytes(weight_type, cols), num_tokens, out, out_stride);
  }
#endif
  reference::panel_dot(weight_type, cols, packed, panel, num_rows, act, act_row_bytes, num_tokens, out, out_stride);
}

}  // namespace pagedchat
