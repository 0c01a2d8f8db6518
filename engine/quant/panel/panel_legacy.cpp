// Q4_0, Q5_0, Q5_1, IQ4_NL and MXFP4 panels: packing a row-major matrix, and the scalar reference kernel.
#include "engine/quant/panel/panel_legacy.h"

#include <cmath>
#include <cstring>

#include "engine/common/float16.h"
#include "engine/quant/panel/panel_blocks.h"
#include "engine/quant/panel/panel_pack.h"
#include "engine/quant/quant_blocks.h"

namespace pagedchat {
namespace {

// Bit 4 of each element of a row block, in the panel's qh byte order.
template <typename Row>
void put_fifth_bits(uint8_t* qh, int r, const Row& b) {
  const uint32_t bits = load_qh32(b.qh);
  for (int e = 0; e < 4; ++e) {
    uint8_t byte = 0;
    for (int c = 0; c < 4; ++c) {
      byte |= static_cast<uint8_t>(((bits >> (4 * c + e)) & 1u) << c);
      byte |= static_cast<uint8_t>(((bits >> (16 + 4 * c + e)) & 1u) << (4 + c));
    }
    qh[4 * r + e] = byte;
  }
}

template <typename Panel, typename Row>
void put_row(Panel& p, int r, const Row& b) {
  if constexpr (requires { p.e; }) p.e[r] = b.e;
  else p.d[r] = b.d;
  if constexpr (requires { p.m; }) p.m[r] = b.m;
  if constexpr (requires { p.qh; }) put_fifth_bits(p.qh, r, b);
  for (int c = 0; c < 4; ++c) std::memcpy(&p.q[c][4 * r], b.qs + 4 * c, 4);
}

template <typename Panel, typename Act>
void reference_dot(int offset, int64_t cols, const void* packed, int64_t panel, int64_t num_rows, const void* act,
                   size_t act_row_bytes, int64_t num_tokens, float* out, int64_t out_stride) {
  const int64_t nb = cols / kQK;
  const auto* blocks = static_cast<const Panel*>(packed) + panel * nb;
  for (int64_t t = 0; t < num_tokens; ++t) {
    const auto* y = reinterpret_cast<const Act*>(static_cast<const uint8_t*>(act) + t * act_row_bytes);
    for (int64_t r = 0; r < num_rows; ++r) {
      float acc = 0.0f, min = 0.0f;
      for (int64_t i = 0; i < nb; ++i) {
        int32_t s = 0, sum_a = 0;
        for (int k = 0; k < kQK; ++k) {
          s += legacy_panel_quant(blocks[i], static_cast<int>(r), k) * y[i].qs[k];
          sum_a += y[i].qs[k];
        }
        s -= offset * sum_a;
        acc = std::fma(fp16_to_fp32(blocks[i].d[r]) * fp16_to_fp32(y[i].d), static_cast<float>(s), acc);
        if constexpr (requires { blocks[i].m; }) min = std::fma(fp16_to_fp32(blocks[i].m[r]), fp16_to_fp32(y[i].s), min);
      }
      out[t * out_stride + r] = requires { blocks->m; } ? acc + min : acc;
    }
  }
}

// IQ4_NL and MXFP4: the signed levels against the activation's quants.
template <typename Panel>
void reference_level_dot(int64_t cols, const void* packed, int64_t panel, int64_t num_rows, const void* act,
                         size_t act_row_bytes, int64_t num_tokens, float* out, int64_t out_stride) {
  const int64_t nb = cols / kQK;
  const auto* blocks = static_cast<const Panel*>(packed) + panel * nb;
  for (int64_t t = 0; t < num_tokens; ++t) {
    const auto* y = reinterpret_cast<const block_q8_0*>(static_cast<const uint8_t*>(act) + t * act_row_bytes);
    for (int64_t r = 0; r < num_rows; ++r) {
      float acc = 0.0f;
      for (int64_t i = 0; i < nb; ++i) {
        int32_t s = 0;
        for (int k = 0; k < kQK; ++k) s += panel_level(blocks[i], static_cast<int>(r), k) * y[i].qs[k];
        acc = std::fma(panel_scale(blocks[i], static_cast<int>(r)) * fp16_to_fp32(y[i].d), static_cast<float>(s), acc);
      }
      out[t * out_stride + r] = acc;
    }
  }
}

}  // namespace

bool is_legacy_panel_type(GgmlType type) {
  return type == GgmlType::Q4_0 || type == GgmlType::Q5_0 || type == GgmlType::Q5_1 || is_level_panel_type(type);
}

bool is_level_panel_type(GgmlType type) { return type == GgmlType::IQ4_NL || type == GgmlType::MXFP4; }

int legacy_quant_offset(GgmlType type) {
  if (is_level_panel_type(type)) return 128;
  return type == GgmlType::Q4_0 ? 8 : type == GgmlType::Q5_0 ? 16 : 0;
}

void pack_legacy_panels(GgmlType type, const void* w, size_t row_stride, int64_t rows, int64_t cols, void* dst) {
  with_legacy_panel(type, [&](auto layout) {
    using L = decltype(layout);
    pack_panel_rows<typename L::panel, typename L::row>(w, row_stride, rows, cols, dst,
                                                        put_row<typename L::panel, typename L::row>);
  });
}

void reference_legacy_panel_dot(GgmlType type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows,
                                const void* act, size_t act_row_bytes, int64_t num_tokens, float* out,
                                int64_t out_stride) {
  with_legacy_panel(type, [&](auto layout) {
    using L = decltype(layout);
    if constexpr (kLevelPanel<typename L::panel>)
      reference_level_dot<typename L::panel>(cols, packed, panel, num_rows, act, act_row_bytes, num_tokens, out, out_stride);
    else
      reference_dot<typename L::panel, typename L::act>(legacy_quant_offset(type), cols, packed, panel, num_rows, act,
                                                        act_row_bytes, num_tokens, out, out_stride);
  });
}

}  // namespace pagedchat
