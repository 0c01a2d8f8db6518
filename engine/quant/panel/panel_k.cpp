// K-quant panels: packing a row-major Q4_K / Q5_K / Q6_K matrix, and the scalar reference kernel
// (the low-bit K-quants' are panel_low_bits.cpp's).
#include "engine/quant/panel/panel_k.h"

#include <cmath>
#include <cstring>

#include "engine/common/float16.h"
#include "engine/quant/panel/panel_blocks.h"
#include "engine/quant/panel/panel_low_bits.h"
#include "engine/quant/panel/panel_pack.h"
#include "engine/quant/quant_blocks.h"

namespace pagedchat {
namespace {

// Q4_K and Q5_K: the scales and mins unpacked, the quant words interleaved, and Q5_K's fifth bits.
template <typename Panel, typename Row>
void put_row(Panel& p, int r, const Row& b) {
  p.d[r] = b.d;
  p.dmin[r] = b.dmin;
  for (int s = 0; s < 8; ++s) {
    uint8_t scale, min;
    get_scale_min_k4(s, b.scales, &scale, &min);
    p.scales[s][r] = scale;
    p.mins[s / 2][2 * r + s % 2] = min;
  }
  for (int w = 0; w < 8; ++w) {
    if constexpr (requires { p.qh; }) std::memcpy(&p.qh[w][4 * r], b.qh + 4 * w, 4);
    for (int c = 0; c < 4; ++c) std::memcpy(&p.q[c][w][4 * r], b.qs + 32 * c + 4 * w, 4);
  }
}

void put_row(panel_q6_K& p, int r, const block_q6_K& b) {
  p.d[r] = b.d;
  for (int g = 0; g < 16; ++g) {
    p.scales[g][r] = b.scales[g];
    for (int e = 0; e < 4; ++e) {
      int q[4];
      for (int k = 0; k < 4; ++k) q[k] = quant_q6_K(b, 16 * g + 4 * k + e) + 32;  // unsigned, 0..63
      p.ql[g][0][4 * r + e] = static_cast<uint8_t>((q[0] & 15) | (q[2] & 15) << 4);
      p.ql[g][1][4 * r + e] = static_cast<uint8_t>((q[1] & 15) | (q[3] & 15) << 4);
      p.qh[g][4 * r + e] = static_cast<uint8_t>(q[0] >> 4 | (q[1] >> 4) << 2 | (q[2] >> 4) << 4 | (q[3] >> 4) << 6);
    }
  }
}

template <typename Panel>
float q4_K_row(const Panel* blocks, int64_t nb, int r, const block_q8_K* y) {
  float acc = 0.0f, mn = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    int32_t sumi = 0, summ = 0;
    for (int s = 0; s < 8; ++s) {
      int32_t dot = 0;
      for (int l = 0; l < 32; ++l) dot += panel_quant(blocks[i], r, 32 * s + l) * y[i].qs[32 * s + l];
      sumi += blocks[i].scales[s][r] * dot;
      summ += blocks[i].mins[s / 2][2 * r + s % 2] * (y[i].bsums[2 * s] + y[i].bsums[2 * s + 1]);
    }
    acc = std::fma(fp16_to_fp32(blocks[i].d[r]) * y[i].d, static_cast<float>(sumi), acc);
    mn = std::fma(fp16_to_fp32(blocks[i].dmin[r]) * y[i].d, static_cast<float>(summ), mn);
  }
  return acc - mn;
}

float q6_K_row(const panel_q6_K* blocks, int64_t nb, int r, const block_q8_K* y) {
  float acc = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    int32_t sumi = 0;
    for (int g = 0; g < 16; ++g) {
      int32_t dot = -32 * y[i].bsums[g];
      for (int l = 0; l < 16; ++l) dot += panel_quant(blocks[i], r, 16 * g + l) * y[i].qs[16 * g + l];
      sumi += blocks[i].scales[g][r] * dot;
    }
    acc = std::fma(fp16_to_fp32(blocks[i].d[r]) * y[i].d, static_cast<float>(sumi), acc);
  }
  return acc;
}

}  // namespace

bool is_k_panel_type(GgmlType type) {
  return type == GgmlType::Q4_K || type == GgmlType::Q5_K || type == GgmlType::Q6_K || is_low_bits_panel_type(type);
}

size_t k_panel_block_bytes(GgmlType type) {
  if (is_low_bits_panel_type(type)) return low_bits_panel_block_bytes(type);
  if (type == GgmlType::Q4_K) return sizeof(panel_q4_K);
  return type == GgmlType::Q5_K ? sizeof(panel_q5_K) : sizeof(panel_q6_K);
}

void pack_k_panels(GgmlType type, const void* w, size_t row_stride, int64_t rows, int64_t cols, void* dst) {
  if (is_low_bits_panel_type(type)) return pack_low_bits_panels(type, w, row_stride, rows, cols, dst);
  if (type == GgmlType::Q4_K) {
    return pack_panel_rows<panel_q4_K, block_q4_K>(w, row_stride, rows, cols, dst, put_row<panel_q4_K, block_q4_K>);
  }
  if (type == GgmlType::Q5_K) {
    return pack_panel_rows<panel_q5_K, block_q5_K>(w, row_stride, rows, cols, dst, put_row<panel_q5_K, block_q5_K>);
  }
  pack_panel_rows<panel_q6_K, block_q6_K>(w, row_stride, rows, cols, dst,
                                          [](panel_q6_K& p, int r, const block_q6_K& b) { put_row(p, r, b); });
}

void expand_k_min_sums(const void* act_row, int64_t num_super_blocks, void* dst) {
  const auto* y = static_cast<const block_q8_K*>(act_row);
  auto* out = static_cast<vnni_q8_K_min_sums*>(dst);
  for (int64_t i = 0; i < num_super_blocks; ++i) {
    const int16_t* bs = y[i].bsums;
    for (int c = 0; c < 4; ++c) {
      const int lo = bs[4 * c] + bs[4 * c + 1], hi = bs[4 * c + 2] + bs[4 * c + 3];
      out[i].pairs[c] = (static_cast<uint32_t>(lo) & 0xffff) | static_cast<uint32_t>(hi) << 16;
    }
  }
}

void reference_k_panel_dot(GgmlType type, int64_t cols, const void* packed, int64_t panel, int64_t num_rows,
                           const void* act, size_t act_row_bytes, int64_t num_tokens, float* out, int64_t out_stride) {
  if (is_low_bits_panel_type(type)) {
    return reference_low_bits_panel_dot(type, cols, packed, panel, num_rows, act, act_row_bytes, num_tokens, out,
                                        out_stride);
  }
  if (type == GgmlType::Q4_K) {
    return reference_k_rows<panel_q4_K>(cols, packed, panel, num_rows, act, act_row_bytes, num_tokens, out, out_stride,
                                     q4_K_row<panel_q4_K>);
  }
  if (type == GgmlType::Q5_K) {
    return reference_k_rows<panel_q5_K>(cols, packed, panel, num_rows, act, act_row_bytes, num_tokens, out, out_stride,
                                     q4_K_row<panel_q5_K>);
  }
  reference_k_rows<panel_q6_K>(cols, packed, panel, num_rows, act, act_row_bytes, num_tokens, out, out_stride,
                               q6_K_row);
}

}  // namespace pagedchat
