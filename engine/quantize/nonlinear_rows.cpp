// The non-linear 4-bit types: IQ4_NL and IQ4_XS (16 fixed levels, llama.cpp's
// quantize_row_iq4_nl_impl, as quantize_iq4_nl / quantize_iq4_xs call it for a model file: seven
// trial scales either side) and MXFP4 (power-of-two scales, E2M1 levels: quantize_row_mxfp4_ref,
// which takes no importance weights).

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
constexpr int kTrials = 7;  // trial scales each side (ntry)

int8_t iq4_value(int q) { return static_cast<int8_t>(iq4_level(q)); }

// The level nearest x among the 16 sorted levels (ties to the upper one but for the exact
// midpoint rule of best_index_int8).
int nearest_level(float x) {
  if (x <= iq4_value(0)) return 0;
  if (x >= iq4_value(15)) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (x < iq4_value(mid)) hi = mid;
    else lo = mid;
  }
  return x - iq4_value(hi - 1) < iq4_value(hi) - x ? hi - 1 : hi;
}

// One super-block of `size` elements in groups of 32. groups > 1 (IQ4_XS): each group's scale
// is stored in 6 bits against the super-block's fp16 scale; 1 (IQ4_NL): the group's scale is
// the fp16 scale itself. levels: size bytes of scratch; q4: size / 2 bytes out.
void iq4_super_block(int size, const float* x, uint16_t* d_out, uint8_t* q4, uint16_t* scales_h, uint8_t* scales_l,
                     const float* importance) {
  constexpr int kGroup = 32;
  const int groups = size / kGroup;
  float scales[8], weight[kGroup];
  uint8_t levels[kQKK];
  float sigma2 = 0;
  for (int j = 0; j < size; ++j) sigma2 += x[j] * x[j];
  sigma2 *= 2.f / static_cast<float>(size);
  std::memset(q4, 0, static_cast<size_t>(size / 2));
  *d_out = fp32_to_fp16(0.f);
  float max_scale = 0, amax_scale = 0;
  for (int ib = 0; ib < groups; ++ib) {
    const float* xb = x + ib * kGroup;
    uint8_t* lb = levels + ib * kGroup;
    for (int j = 0; j < kGroup; ++j)
      weight[j] = importance ? importance[ib * kGroup + j] * std::sqrt(sigma2 + xb[j] * xb[j]) : xb[j] * xb[j];
    float amax;
    const float max = signed_absmax(kGroup, xb, &amax);
    if (amax < kGroupMaxEps) {
      scales[ib] = 0;
      continue;
    }
    float d = -max / static_cast<float>(iq4_value(0));
    float id = 1 / d;
    float sumqx = 0, sumq2 = 0;
    for (int j = 0; j < kGroup; ++j) {
      const int l = nearest_level(id * xb[j]);
      lb[j] = static_cast<uint8_t>(l);
      const float q = static_cast<float>(iq4_value(l));
      sumqx += weight[j] * q * xb[j];
      sumq2 += weight[j] * q * q;
    }
    d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
    float best = d * sumqx;
    for (int trial = -kTrials; trial <= kTrials; ++trial) {
      id = static_cast<float>(trial + iq4_value(0)) / max;
      sumqx = sumq2 = 0;
      for (int j = 0; j < kGroup; ++j) {
        const float q = static_cast<float>(iq4_value(nearest_level(id * xb[j])));
        sumqx += weight[j] * q * xb[j];
        sumq2 += weight[j] * q * q;
      }
      if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
        d = sumqx / sumq2;
        best = d * sumqx;
      }
    }
    scales[ib] = d;
    if (std::fabs(d) > amax_scale) {
      amax_scale = std::fabs(d);
      max_scale = d;
    }
  }
  if (groups > 1) {
    std::memset(scales_h, 0, sizeof(uint16_t) * static_cast<size_t>((groups + 7) / 8));
    const float d = -max_scale / 32;
    *d_out = fp32_to_fp16(d);
    const float id = d != 0 ? 1 / d : 0.f;
    for (int ib = 0; ib < groups; ++ib) {
      int l = std::max(-32, std::min(31, nearest_int(id * scales[ib])));
      const float dl = d * static_cast<float>(l);
      const float idl = dl != 0 ? 1 / dl : 0.f;
      for (int j = 0; j < kGroup; ++j) levels[ib * kGroup + j] = static_cast<uint8_t>(nearest_level(idl * x[ib * kGroup + j]));
      l += 32;
      const uint8_t low = static_cast<uint8_t>(l & 0xf), high = static_cast<uint8_t>(l >> 4);
      if (ib % 2 == 0) scales_l[ib / 2] = low;
      else scales_l[ib / 2] = static_cast<uint8_t>(scales_l[ib / 2] | (low << 4));
      *scales_h = static_cast<uint16_t>(*scales_h | (high << 2 * (ib % 8)));
    }
  } else {
    *d_out = fp32_to_fp16(scales[0]);
    const float id = scales[0] != 0 ? 1 / scales[0] : 0;
    for (int j = 0; j < size; ++j) levels[j] = static_cast<uint8_t>(nearest_level(id * x[j]));
  }
  for (int i = 0; i < size / 32; ++i)
    for (int j = 0; j < 16; ++j) q4[16 * i + j] = static_cast<uint8_t>(levels[32 * i + j] | (levels[32 * i + 16 + j] << 4));
}

int nearest_fp4(float x, float scale) {
  int best = 0;
  float best_err = std::fabs(static_cast<float>(fp4_level(0)) * scale - x);
  for (int i = 1; i < 16; ++i) {
    const float err = std::fabs(static_cast<float>(fp4_level(i)) * scale - x);
    if (err < best_err) {
      best = i;
      best_err = err;
    }
  }
  return best;
}

void mxfp4_block(const float* x, block_mxfp4* y) {
  float amax = 0.0f;
  for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
  // The power of two that puts the largest value in the levels' top range; as the reference
  // converts it (through a 32-bit integer), for every amax.
  y->e = amax > 0.0f ? static_cast<uint8_t>(static_cast<int>(std::floor(std::log2(amax)) - 2 + 127)) : 0;
  const float d = e8m0_half(y->e);
  for (int j = 0; j < kQK / 2; ++j)
    y->qs[j] = static_cast<uint8_t>(nearest_fp4(x[j], d) | (nearest_fp4(x[j + kQK / 2], d) << 4));
}

}  // namespace

void quantize_nonlinear_row(GgmlType type, const float* x, void* dst, int64_t n, const float* importance) {
  switch (type) {
    case GgmlType::IQ4_NL: {
      auto* y = static_cast<block_iq4_nl*>(dst);
      uint16_t unused_h = 0;
      for (int64_t b = 0; b < n / kQK; ++b)
        iq4_super_block(kQK, x + b * kQK, &y[b].d, y[b].qs, &unused_h, nullptr, importance ? importance + b * kQK : nullptr);
      return;
    }
    case GgmlType::IQ4_XS: {
      auto* y = static_cast<block_iq4_xs*>(dst);
      for (int64_t b = 0; b < n / kQKK; ++b)
        iq4_super_block(kQKK, x + b * kQKK, &y[b].d, y[b].qs, &y[b].scales_h, y[b].scales_l,
                        importance ? importance + b * kQKK : nullptr);
      return;
    }
    case GgmlType::MXFP4: {
      auto* y = static_cast<block_mxfp4*>(dst);
      for (int64_t b = 0; b < n / kQK; ++b) mxfp4_block(x + b * kQK, y + b);  // no weighted form
      return;
    }
    default: fail("%s is not a non-linear 4-bit type", std::string(ggml_type_traits(type).name).c_str());
  }
}

}  // namespace pagedchat::quantize
