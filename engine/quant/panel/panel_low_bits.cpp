// Low-bit K-quant panels (Q2_K, Q3_K, IQ4_XS): packing, and the scalar reference kernel.
#include "engine/quant/panel/panel_low_bits.h"

#include <cmath>

#include "engine/common/float16.h"
#include "engine/quant/panel/panel_blocks.h"
#include "engine/quant/panel/panel_pack.h"
#include "engine/quant/quant_blocks.h"

namespace pagedchat {
namespace {

// Row r's quants of a super-block into the interleaved 2-bit words of Q2_K and Q3_K: quad k of
// group g at bits 2 k of byte 4 r + e of q[g].
template <typename Panel, typename QuantAt>
void put_two_bits(Panel& p, int r, QuantAt quant_at) {
  for (int g = 0; g < 16; ++g)
    for (int e = 0; e < 4; ++e) {
      uint8_t byte = 0;
      for (int k = 0; k < 4; ++k) byte |= static_cast<uint8_t>((quant_at(16 * g + 4 * k + e) & 3) << (2 * k));
      p.q[g][4 * r + e] = byte;
    }
}

void put_row(panel_q2_K& p, int r, const block_q2_K& b) {
  p.d[r] = b.d;
  p.dmin[r] = b.dmin;
  for (int g = 0; g < 16; ++g) p.scales[g][r] = b.scales[g];
  put_two_bits(p, r, [&](int k) { return quant_q2_K(b, k); });
}

void put_row(panel_q3_K& p, int r, const block_q3_K& b) {
  p.d[r] = b.d;
  for (int g = 0; g < 16; ++g) p.scales[g][r] = static_cast<int8_t>(get_scale_q3_K(b.scales, g));
  auto unsigned_quant = [&](int k) { return quant_q3_K(b, k) + 4; };  // 0..7
  put_two_bits(p, r, unsigned_quant);
  for (int g = 0; g < 16; ++g)
    for (int e = 0; e < 4; ++e)
      for (int k = 0; k < 4; ++k)
        p.qh[g / 2][4 * r + e] |= static_cast<uint8_t>((unsigned_quant(16 * g + 4 * k + e) >> 2) << (4 * (g % 2) + k));
}

void put_row(panel_iq4_xs& p, int r, const block_iq4_xs& b) {
  p.d[r] = b.d;
  for (int s = 0; s < 8; ++s) {
    p.scales[s][r] = static_cast<int8_t>(get_scale_iq4_xs(b, s));
    for (int w = 0; w < 4; ++w)
      for (int e = 0; e < 4; ++e) p.q[s][w][4 * r + e] = b.qs[16 * s + 4 * w + e];
  }
}

float row_dot(const panel_q2_K* blocks, int64_t nb, int r, const block_q8_K* y) {
  float acc = 0.0f, mn = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    int32_t sumi = 0, summ = 0;
    for (int g = 0; g < 16; ++g) {
      int32_t dot = 0;
      for (int l = 0; l < 16; ++l) dot += panel_quant(blocks[i], r, 16 * g + l) * y[i].qs[16 * g + l];
      sumi += (blocks[i].scales[g][r] & 0x0f) * dot;
      summ += (blocks[i].scales[g][r] >> 4) * y[i].bsums[g];
    }
    acc = std::fma(fp16_to_fp32(blocks[i].d[r]) * y[i].d, static_cast<float>(sumi), acc);
    mn = std::fma(fp16_to_fp32(blocks[i].dmin[r]) * y[i].d, static_cast<float>(summ), mn);
  }
  return acc - mn;
}

float row_dot(const panel_q3_K* blocks, int64_t nb, int r, const block_q8_K* y) {
  float acc = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    int32_t sumi = 0;
    for (int g = 0; g < 16; ++g) {
      int32_t dot = -4 * y[i].bsums[g];
      for (int l = 0; l < 16; ++l) dot += panel_quant(blocks[i], r, 16 * g + l) * y[i].qs[16 * g + l];
      sumi += blocks[i].scales[g][r] * dot;
    }
    acc = std::fma(fp16_to_fp32(blocks[i].d[r]) * y[i].d, static_cast<float>(sumi), acc);
  }
  return acc;
}

float row_dot(const panel_iq4_xs* blocks, int64_t nb, int r, const block_q8_K* y) {
  float acc = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    int32_t sumi = 0;
    for (int s = 0; s < 8; ++s) {
      int32_t dot = 0;
      for (int l = 0; l < 32; ++l) dot += iq4_level(panel_quant(blocks[i], r, 32 * s + l)) * y[i].qs[32 * s + l];
      sumi += blocks[i].scales[s][r] * dot;
    }
    acc = std::fma(fp16_to_fp32(blocks[i].d[r]) * y[i].d, static_cast<float>(sumi), acc);
  }
  return acc;
}

// The row block each panel layout packs.
template <typename Panel>
struct RowOf;
template <>
struct RowOf<panel_q2_K> {
  using type = block_q2_K;
};
template <>
struct RowOf<panel_q3_K> {
  using type = block_q3_K;
};
template <>
struct RowOf<panel_iq4_xs> {
  using type = block_iq4_xs;
};

}  // namespace

bool is_low_bits_panel_type(GgmlType type) {
  return type == GgmlType::Q2_K || type == GgmlType::Q3_K || type == GgmlType::IQ4_XS;
}

size_t low_bits_panel_block_bytes(GgmlType type) {
  return with_low_bits_panel(type, [](auto layout) { return sizeof(typename decltype(layout)::type); });
}

void pack_low_bits_panels(GgmlType type, const void* w, size_t row_stride, int64_t rows, int64_t cols, void* dst) {
  with_low_bits_panel(type, [&](auto layout) {
    using Panel = typename decltype(layout)::type;
    using Row = typename RowOf<Panel>::type;
    auto put = [](Panel& p, int r, const Row& b) { put_row(p, r, b); };
    pack_panel_rows<Panel, Row>(w, row_stride, rows, cols, dst, put);
  });
}

void reference_low_bits_panel_dot(GgmlType type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows,
                                  const void* act, size_t act_row_bytes, int64_t num_tokens, float* out,
                                  int64_t out_stride) {
  with_low_bits_panel(type, [&](auto layout) {
    using Panel = typename decltype(layout)::type;
    auto row = [](const Panel* blocks, int64_t nb, int r, const block_q8_K* y) { return row_dot(blocks, nb, r, y); };
    reference_k_rows<Panel>(cols, packed, panel, num_rows, act, act_row_bytes, num_tokens, out, out_stride, row);
  });
}

}  // namespace pagedchat
