// The K-quants (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K): llama.cpp's quantize_row_<type>_ref without an
// importance matrix, quantize_row_<type>_impl with one. Each super-block of 256 is fitted in
// groups (16 or 32 elements: a scale, and for Q2_K/Q4_K/Q5_K a minimum), the groups' scales
// are themselves quantized against one fp16 scale, and the elements are then rounded again
// against the scales as stored, so the levels match what a reader will multiply them by.

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/common/error.h"
#include "engine/common/float16.h"
#include "engine/quant/quant_blocks.h"
#include "engine/quantize/quantize_rows.h"
#include "engine/quantize/scale_fit.h"

namespace pagedchat::quantize {

namespace {

constexpr float kGroupMaxEps = 1e-15f;

// Four 2-bit levels per byte, as Q2_K and Q3_K lay them out (quant_blocks.h).
void pack_2bit(const uint8_t* levels, uint8_t* qs) {
  for (int j = 0; j < kQKK; j += 128)
    for (int l = 0; l < 32; ++l)
      qs[j / 4 + l] = static_cast<uint8_t>(levels[j + l] | (levels[j + l + 32] << 2) |
                                            (levels[j + l + 64] << 4) | (levels[j + l + 96] << 6));
}

// ---- Q2_K --------------------------------------------------------------------------------

// Rounds each group against the stored scale and minimum (groups whose scale is zero keep the
// levels of their fit).
void q2_K_requantize(const float* x, const block_q2_K* y, uint8_t* levels) {
  for (int j = 0; j < kQKK / 16; ++j) {
    const float d = fp16_to_fp32(y->d) * static_cast<float>(y->scales[j] & 0xF);
    if (d == 0) continue;
    const float dm = fp16_to_fp32(y->dmin) * static_cast<float>(y->scales[j] >> 4);
    for (int ii = 0; ii < 16; ++ii) {
      const int l = nearest_int((x[16 * j + ii] + dm) / d);
      levels[16 * j + ii] = static_cast<uint8_t>(std::max(0, std::min(3, l)));
    }
  }
}

void q2_K_plain(const float* x, block_q2_K* y) {
  uint8_t levels[kQKK], scratch[16];
  float weights[16], mins[kQKK / 16], scales[kQKK / 16];
  const float q4scale = 15.f;
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < kQKK / 16; ++j) {
    for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
    scales[j] = fit_affine(16, 3, x + 16 * j, weights, levels + 16 * j, &mins[j], scratch, -0.5f, 0.1f, 15, true);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  if (max_scale > 0) {
    const float iscale = q4scale / max_scale;
    for (int j = 0; j < kQKK / 16; ++j) y->scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
    y->d = fp32_to_fp16(max_scale / q4scale);
  } else {
    for (int j = 0; j < kQKK / 16; ++j) y->scales[j] = 0;
    y->d = fp32_to_fp16(0.f);
  }
  if (max_min > 0) {
    const float iscale = q4scale / max_min;
    for (int j = 0; j < kQKK / 16; ++j)
      y->scales[j] = static_cast<uint8_t>(y->scales[j] | (nearest_int(iscale * mins[j]) << 4));
    y->dmin = fp32_to_fp16(max_min / q4scale);
  } else {
    y->dmin = fp32_to_fp16(0.f);
  }
  q2_K_requantize(x, y, levels);
  pack_2bit(levels, y->qs);
}

void q2_K_weighted(const float* x, block_q2_K* y, const float* importance) {
  uint8_t levels[kQKK], scratch[16], scale_levels[kQKK / 16], min_levels[kQKK / 16];
  float mins[kQKK / 16], scales[kQKK / 16], group_weight[kQKK / 16] = {}, weight[16];
  float sumx2 = 0;
  for (int j = 0; j < kQKK; ++j) sumx2 += x[j] * x[j];
  const float sigma2 = sumx2 / kQKK;
  for (int j = 0; j < kQKK / 16; ++j) {
    const float* qw = importance + 16 * j;
    for (int l = 0; l < 16; ++l) weight[l] = qw[l] * std::sqrt(sigma2 + x[16 * j + l] * x[16 * j + l]);
    for (int l = 0; l < 16; ++l) group_weight[j] += weight[l];
    scales[j] = fit_affine_weighted(16, 3, x + 16 * j, weight, levels + 16 * j, &mins[j], scratch, -0.9f, 0.05f, 36, false);
  }
  const float dm = fit_positive(kQKK / 16, 15, scales, scale_levels, group_weight);
  const float mm = fit_positive(kQKK / 16, 15, mins, min_levels, group_weight);
  y->d = fp32_to_fp16(dm);
  y->dmin = fp32_to_fp16(mm);
  for (int j = 0; j < kQKK / 16; ++j) y->scales[j] = static_cast<uint8_t>(scale_levels[j] | (min_levels[j] << 4));
  q2_K_requantize(x, y, levels);
  pack_2bit(levels, y->qs);
}

// ---- Q3_K --------------------------------------------------------------------------------

// The 16 six-bit scales (stored + 32) into 12 bytes: low nibbles first, the top two bits of
// scale j at bits 2 (j / 4) of byte 8 + j % 4.
void q3_K_put_scales(const int* stored, block_q3_K* y) {
  std::memset(y->scales, 0, 12);
  for (int j = 0; j < kQKK / 16; ++j) {
    int l = stored[j];
    if (j < 8) y->scales[j] = static_cast<uint8_t>(l & 0xF);
    else y->scales[j - 8] = static_cast<uint8_t>(y->scales[j - 8] | ((l & 0xF) << 4));
    l >>= 4;
    y->scales[j % 4 + 8] = static_cast<uint8_t>(y->scales[j % 4 + 8] | (l << (2 * (j / 4))));
  }
}

// Rounds against the stored scales, then splits each level into its low 2 bits and hmask.
void q3_K_finish(const float* x, block_q3_K* y, int8_t* levels) {
  for (int j = 0; j < kQKK / 16; ++j) {
    int8_t sc = static_cast<int8_t>(j < 8 ? y->scales[j] & 0xF : y->scales[j - 8] >> 4);
    sc = static_cast<int8_t>((sc | (((y->scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32);
    const float d = fp16_to_fp32(y->d) * static_cast<float>(sc);
    if (d == 0) continue;
    for (int ii = 0; ii < 16; ++ii) {
      const int l = std::max(-4, std::min(3, nearest_int(x[16 * j + ii] / d)));
      levels[16 * j + ii] = static_cast<int8_t>(l + 4);
    }
  }
  std::memset(y->hmask, 0, kQKK / 8);
  int m = 0;
  uint8_t hm = 1;
  uint8_t low[kQKK];
  for (int j = 0; j < kQKK; ++j) {
    int l = levels[j];
    if (l > 3) {
      y->hmask[m] = static_cast<uint8_t>(y->hmask[m] | hm);
      l -= 4;
    }
    low[j] = static_cast<uint8_t>(l);
    if (++m == kQKK / 8) {
      m = 0;
      hm = static_cast<uint8_t>(hm << 1);
    }
  }
  pack_2bit(low, y->qs);
}

void q3_K_plain(const float* x, block_q3_K* y) {
  int8_t levels[kQKK];
  float scales[kQKK / 16];
  float max_scale = 0, amax = 0;
  for (int j = 0; j < kQKK / 16; ++j) {
    scales[j] = fit_symmetric_refined(16, 4, x + 16 * j, levels + 16 * j);
    const float scale = std::fabs(scales[j]);
    if (scale > amax) {
      amax = scale;
      max_scale = scales[j];
    }
  }
  if (max_scale != 0) {
    const float iscale = -32.f / max_scale;
    int stored[kQKK / 16];
    for (int j = 0; j < kQKK / 16; ++j) {
      // An int8_t as in the reference: nearest_int's value is narrowed before the clamp.
      const int8_t l = static_cast<int8_t>(nearest_int(iscale * scales[j]));
      stored[j] = std::max<int>(-32, std::min<int>(31, l)) + 32;
    }
    q3_K_put_scales(stored, y);
    y->d = fp32_to_fp16(1 / iscale);
  } else {
    std::memset(y->scales, 0, 12);
    y->d = fp32_to_fp16(0.f);
  }
  q3_K_finish(x, y, levels);
}

void q3_K_weighted(const float* x, block_q3_K* y, const float* importance) {
  int8_t levels[kQKK], scale_levels[kQKK / 16];
  float scales[kQKK / 16], weight[16], group_weight[kQKK / 16];
  float sumx2 = 0;
  for (int j = 0; j < kQKK; ++j) sumx2 += x[j] * x[j];
  const float sigma2 = 2 * sumx2 / kQKK;
  for (int j = 0; j < kQKK / 16; ++j) {
    const float* qw = importance + 16 * j;
    for (int l = 0; l < 16; ++l) weight[l] = qw[l] * std::sqrt(sigma2 + x[16 * j + l] * x[16 * j + l]);
    float sumw = 0;
    for (int l = 0; l < 16; ++l) sumw += weight[l];
    group_weight[j] = sumw;
    scales[j] = fit_symmetric(16, 4, x + 16 * j, levels + 16 * j, weight);
  }
  const float d_block = fit_symmetric(kQKK / 16, 32, scales, scale_levels, group_weight);
  int stored[kQKK / 16];
  for (int j = 0; j < kQKK / 16; ++j) stored[j] = scale_levels[j];
  q3_K_put_scales(stored, y);
  y->d = fp32_to_fp16(d_block);
  q3_K_finish(x, y, levels);
}

// ---- Q4_K and Q5_K -----------------------------------------------------------------------

// The 8 six-bit scales and minima into 12 bytes (the layout get_scale_min_k4 reads).
void put_scales_mins(const uint8_t* ls, const uint8_t* lm, uint8_t* scales) {
  for (int j = 0; j < kQKK / 32; ++j) {
    if (j < 4) {
      scales[j] = ls[j];
      scales[j + 4] = lm[j];
    } else {
      scales[j + 4] = static_cast<uint8_t>((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
      scales[j - 4] = static_cast<uint8_t>(scales[j - 4] | ((ls[j] >> 4) << 6));
      scales[j - 0] = static_cast<uint8_t>(scales[j - 0] | ((lm[j] >> 4) << 6));
    }
  }
}

void scale_min_k4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
  }
}

// Rounds each group of 32 against the stored scale and minimum, levels in [0, nmax].
void requantize_32(const float* x, uint16_t d16, uint16_t dmin16, const uint8_t* scales, int nmax, uint8_t* levels) {
  for (int j = 0; j < kQKK / 32; ++j) {
    uint8_t sc, m;
    scale_min_k4(j, scales, &sc, &m);
    const float d = fp16_to_fp32(d16) * static_cast<float>(sc);
    if (d == 0) continue;
    const float dm = fp16_to_fp32(dmin16) * static_cast<float>(m);
    for (int ii = 0; ii < 32; ++ii) {
      const int l = nearest_int((x[32 * j + ii] + dm) / d);
      levels[32 * j + ii] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    }
  }
}

// The plain fit of Q4_K (nmax 15) and Q5_K (nmax 31): each group weighted by its rms plus
// |x|, then scales and minima against the largest of each.
void fit_groups_plain(const float* x, int nmax, float rmin, int nstep, uint8_t* levels, uint8_t* scales_out,
                      uint16_t* d, uint16_t* dmin) {
  uint8_t scratch[32], ls[kQKK / 32], lm[kQKK / 32];
  float weights[32], mins[kQKK / 32], scales[kQKK / 32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < kQKK / 32; ++j) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
    scales[j] = fit_affine(32, nmax, x + 32 * j, weights, levels + 32 * j, &mins[j], scratch, rmin, 0.1f, nstep, false);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  for (int j = 0; j < kQKK / 32; ++j) {
    // uint8_t as in the reference: the rounded value is narrowed, then clamped.
    ls[j] = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
    lm[j] = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
  }
  put_scales_mins(ls, lm, scales_out);
  *d = fp32_to_fp16(max_scale / 63.f);
  *dmin = fp32_to_fp16(max_min / 63.f);
}

// The weighted fit of Q4_K and Q5_K: importance times sqrt(sigma2 + x^2), and the scales and
// minima fitted against the groups' total weight.
void fit_groups_weighted(const float* x, int nmax, const float* importance, uint8_t* levels, uint8_t* scales_out,
                         uint16_t* d, uint16_t* dmin) {
  uint8_t scratch[32], ls[kQKK / 32], lm[kQKK / 32];
  float weights[32], group_weight[kQKK / 32], mins[kQKK / 32], scales[kQKK / 32];
  float sum_x2 = 0;
  for (int l = 0; l < kQKK; ++l) sum_x2 += x[l] * x[l];
  const float sigma2 = 2 * sum_x2 / kQKK;
  for (int j = 0; j < kQKK / 32; ++j) {
    const float* qw = importance + 32 * j;
    for (int l = 0; l < 32; ++l) weights[l] = qw[l] * std::sqrt(sigma2 + x[32 * j + l] * x[32 * j + l]);
    float sumw = 0;
    for (int l = 0; l < 32; ++l) sumw += weights[l];
    group_weight[j] = sumw;
    scales[j] = fit_affine_weighted(32, nmax, x + 32 * j, weights, levels + 32 * j, &mins[j], scratch, -0.9f, 0.05f, 36, false);
  }
  const float d_block = fit_positive(kQKK / 32, 63, scales, ls, group_weight);
  const float m_block = fit_positive(kQKK / 32, 63, mins, lm, group_weight);
  for (int j = 0; j < kQKK / 32; ++j) {
    ls[j] = std::min<uint8_t>(63, ls[j]);
    lm[j] = std::min<uint8_t>(63, lm[j]);
  }
  put_scales_mins(ls, lm, scales_out);
  *d = fp32_to_fp16(d_block);
  *dmin = fp32_to_fp16(m_block);
}

void q4_K_block(const float* x, block_q4_K* y, const float* importance) {
  uint8_t levels[kQKK];
  std::memset(y->scales, 0, sizeof y->scales);
  if (importance) fit_groups_weighted(x, 15, importance, levels, y->scales, &y->d, &y->dmin);
  else fit_groups_plain(x, 15, -1.f, 20, levels, y->scales, &y->d, &y->dmin);
  requantize_32(x, y->d, y->dmin, y->scales, 15, levels);
  uint8_t* q = y->qs;
  for (int j = 0; j < kQKK; j += 64) {
    for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(levels[j + l] | (levels[j + l + 32] << 4));
    q += 32;
  }
}

void q5_K_block(const float* x, block_q5_K* y, const float* importance) {
  uint8_t levels[kQKK];
  std::memset(y->scales, 0, sizeof y->scales);
  if (importance) fit_groups_weighted(x, 31, importance, levels, y->scales, &y->d, &y->dmin);
  else fit_groups_plain(x, 31, -0.5f, 15, levels, y->scales, &y->d, &y->dmin);
  requantize_32(x, y->d, y->dmin, y->scales, 31, levels);
  std::memset(y->qh, 0, kQKK / 8);
  uint8_t* ql = y->qs;
  uint8_t m1 = 1, m2 = 2;
  for (int n = 0; n < kQKK; n += 64) {
    for (int j = 0; j < 32; ++j) {
      int l1 = levels[n + j], l2 = levels[n + j + 32];
      if (l1 > 15) { l1 -= 16; y->qh[j] = static_cast<uint8_t>(y->qh[j] | m1); }
      if (l2 > 15) { l2 -= 16; y->qh[j] = static_cast<uint8_t>(y->qh[j] | m2); }
      ql[j] = static_cast<uint8_t>(l1 | (l2 << 4));
    }
    m1 = static_cast<uint8_t>(m1 << 2);
    m2 = static_cast<uint8_t>(m2 << 2);
    ql += 32;
  }
}

// ---- Q6_K --------------------------------------------------------------------------------

void q6_K_block(const float* x, block_q6_K* y, const float* importance) {
  int8_t levels[kQKK];
  float scales[kQKK / 16];
  float max_scale = 0, max_abs_scale = 0;
  for (int ib = 0; ib < kQKK / 16; ++ib) {
    // With importance, the group's column weights alone (not times sqrt(sigma2 + x^2)).
    const float scale = fit_symmetric(16, 32, x + 16 * ib, levels + 16 * ib, importance ? importance + 16 * ib : nullptr);
    scales[ib] = scale;
    if (std::fabs(scale) > max_abs_scale) {
      max_abs_scale = std::fabs(scale);
      max_scale = scale;
    }
  }
  if (max_abs_scale < kGroupMaxEps) {
    std::memset(y, 0, sizeof *y);
    y->d = fp32_to_fp16(0.f);
    return;
  }
  const float iscale = -128.f / max_scale;
  y->d = fp32_to_fp16(1 / iscale);
  for (int ib = 0; ib < kQKK / 16; ++ib)
    y->scales[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
  for (int j = 0; j < kQKK / 16; ++j) {
    const float d = fp16_to_fp32(y->d) * static_cast<float>(y->scales[j]);
    if (d == 0) continue;
    for (int ii = 0; ii < 16; ++ii) {
      const int l = std::max(-32, std::min(31, nearest_int(x[16 * j + ii] / d)));
      levels[16 * j + ii] = static_cast<int8_t>(l + 32);
    }
  }
  uint8_t* ql = y->ql;
  uint8_t* qh = y->qh;
  for (int j = 0; j < kQKK; j += 128) {
    for (int l = 0; l < 32; ++l) {
      const uint8_t q1 = levels[j + l + 0] & 0xF, q2 = levels[j + l + 32] & 0xF;
      const uint8_t q3 = levels[j + l + 64] & 0xF, q4 = levels[j + l + 96] & 0xF;
      ql[l + 0] = static_cast<uint8_t>(q1 | (q3 << 4));
      ql[l + 32] = static_cast<uint8_t>(q2 | (q4 << 4));
      qh[l] = static_cast<uint8_t>((levels[j + l] >> 4) | ((levels[j + l + 32] >> 4) << 2) |
                                   ((levels[j + l + 64] >> 4) << 4) | ((levels[j + l + 96] >> 4) << 6));
    }
    ql += 64;
    qh += 32;
  }
}

template <typename Block, typename Fn>
void super_blocks(const float* x, void* dst, int64_t n, const float* importance, Fn fn) {
  auto* y = static_cast<Block*>(dst);
  for (int64_t b = 0; b < n / kQKK; ++b)
    fn(x + b * kQKK, y + b, importance ? importance + b * kQKK : nullptr);
}

}  // namespace

void quantize_k_row(GgmlType type, const float* x, void* dst, int64_t n, const float* importance) {
  switch (type) {
    case GgmlType::Q2_K:
      return super_blocks<block_q2_K>(x, dst, n, importance, [](const float* xb, block_q2_K* y, const float* w) {
        if (w) q2_K_weighted(xb, y, w);
        else q2_K_plain(xb, y);
      });
    case GgmlType::Q3_K:
      return super_blocks<block_q3_K>(x, dst, n, importance, [](const float* xb, block_q3_K* y, const float* w) {
        if (w) q3_K_weighted(xb, y, w);
        else q3_K_plain(xb, y);
      });
    case GgmlType::Q4_K: return super_blocks<block_q4_K>(x, dst, n, importance, q4_K_block);
    case GgmlType::Q5_K: return super_blocks<block_q5_K>(x, dst, n, importance, q5_K_block);
    case GgmlType::Q6_K: return super_blocks<block_q6_K>(x, dst, n, importance, q6_K_block);
    default: fail("%s is not a K-quant", std::string(ggml_type_traits(type).name).c_str());
  }
}

}  // namespace pagedchat::quantize
