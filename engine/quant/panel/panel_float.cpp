// F16 and BF16 panels: packing a row-major matrix, and the scalar reference kernel.
#include "engine/quant/panel/panel_float.h"

#include <cmath>
#include <cstring>

#include "engine/common/float16.h"
#include "engine/quant/panel/panel_blocks.h"
#include "engine/quant/panel/panel_pack.h"
#include "engine/quant/quant_blocks.h"

namespace pagedchat {
namespace {
// 32 16-bit values of a row: the unit a panel block takes from each row.
struct Halves32 {
  static constexpr int num_elements = kQK;
  uint16_t v[kQK];
};
}  // namespace

bool is_float_panel_type(GgmlType type) { return type == GgmlType::F16 || type == GgmlType::BF16; }

void pack_float_panels(GgmlType, const void* w, size_t row_stride, int64_t rows, int64_t cols, void* dst) {
  pack_panel_rows<panel_f16, Halves32>(w, row_stride, rows, cols, dst, [](panel_f16& p, int r, const Halves32& b) {
    for (int k = 0; k < kQK; ++k) p.w[k][r] = b.v[k];
  });
}

void reference_float_panel_dot(GgmlType type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows,
                               const void* act, size_t act_row_bytes, int64_t num_tokens, float* out,
                               int64_t out_stride) {
  const int64_t nb = cols / kQK;
  const auto* blocks = static_cast<const panel_f16*>(packed) + panel * nb;
  const bool bf16 = type == GgmlType::BF16;
  for (int64_t t = 0; t < num_tokens; ++t) {
    const auto* x = reinterpret_cast<const float*>(static_cast<const uint8_t*>(act) + t * act_row_bytes);
    for (int64_t r = 0; r < num_rows; ++r) {
      float acc[2] = {0.0f, 0.0f};
      for (int64_t k = 0; k < cols; ++k) {
        const uint16_t h = blocks[k / kQK].w[k % kQK][r];
        const float w = bf16 ? bf16_to_fp32(h) : fp16_to_fp32(h);
        acc[k % 2] = std::fma(w, x[k], acc[k % 2]);
      }
      out[t * out_stride + r] = acc[0] + acc[1];
    }
  }
}

}  // namespace pagedchat
