// The 32-element types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0): llama.cpp's quantize_row_<type>_ref
// without an importance matrix, its quantize_row_<type>_impl with one.

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "engine/common/error.h"
#include "engine/common/float16.h"
#include "engine/quant/quant_blocks.h"
#include "engine/quantize/quantize_rows.h"
#include "engine/quantize/scale_fit.h"

namespace pagedchat::quantize {

namespace {

// Truncation toward zero, as C's float-to-integer conversion (the references add 0.5 or 8.5
// and convert, rather than round).
int truncate(float v) { return static_cast<int>(v); }

// The largest-magnitude element, keeping its sign (the symmetric types scale by it).
float signed_absmax(const float* x) {
  float magnitude;
  return quantize::signed_absmax(kQK, x, &magnitude);
}

// The affine types' block: the minimum and the step of `steps` levels from it, stored as fp16;
// returns the step's reciprocal (0 for a constant block) and the minimum in *min.
float affine_block(const float* x, int steps, uint16_t* d16, uint16_t* m16, float* min) {
  float max;
  *min = FLT_MAX;
  max = -FLT_MAX;
  for (int j = 0; j < kQK; ++j) {
    if (x[j] < *min) *min = x[j];
    if (x[j] > max) max = x[j];
  }
  const float d = (max - *min) / static_cast<float>(steps);
  *d16 = fp32_to_fp16(d);
  *m16 = fp32_to_fp16(*min);
  return d != 0 ? 1.0f / d : 0.0f;
}

// Bit 4 of each 5-bit level into the qh word: element j at bit j.
void put_high_bits(const uint8_t* levels, uint8_t* qs, uint8_t qh_bytes[4]) {
  uint32_t qh = 0;
  for (int j = 0; j < kQK / 2; ++j) {
    const uint8_t lo = levels[j], hi = levels[j + kQK / 2];
    qs[j] = static_cast<uint8_t>((lo & 0x0F) | ((hi & 0x0F) << 4));
    qh |= ((lo & 0x10u) >> 4) << (j + 0);
    qh |= ((hi & 0x10u) >> 4) << (j + kQK / 2);
  }
  std::memcpy(qh_bytes, &qh, sizeof qh);
}

void q4_0_plain(const float* x, block_q4_0* y) {
  const float d = signed_absmax(x) / -8;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  y->d = fp32_to_fp16(d);
  for (int j = 0; j < kQK / 2; ++j) {
    const int lo = std::min(15, truncate(x[j] * id + 8.5f));
    const int hi = std::min(15, truncate(x[j + kQK / 2] * id + 8.5f));
    y->qs[j] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

void q4_1_plain(const float* x, block_q4_1* y) {
  float min;
  const float id = affine_block(x, 15, &y->d, &y->m, &min);
  for (int j = 0; j < kQK / 2; ++j) {
    const int lo = std::min(15, truncate((x[j] - min) * id + 0.5f));
    const int hi = std::min(15, truncate((x[j + kQK / 2] - min) * id + 0.5f));
    y->qs[j] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

void q5_0_plain(const float* x, block_q5_0* y) {
  const float d = signed_absmax(x) / -16;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  y->d = fp32_to_fp16(d);
  uint8_t levels[kQK];
  for (int j = 0; j < kQK; ++j) levels[j] = static_cast<uint8_t>(std::min(31, truncate(x[j] * id + 16.5f)));
  put_high_bits(levels, y->qs, y->qh);
}

void q5_1_plain(const float* x, block_q5_1* y) {
  float min;
  const float id = affine_block(x, 31, &y->d, &y->m, &min);
  uint8_t levels[kQK];
  for (int j = 0; j < kQK; ++j) levels[j] = static_cast<uint8_t>(truncate((x[j] - min) * id + 0.5f));
  put_high_bits(levels, y->qs, y->qh);
}

void q8_0_plain(const float* x, block_q8_0* y) {
  float amax = 0.0f;
  for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  y->d = fp32_to_fp16(d);
  for (int j = 0; j < kQK; ++j) y->qs[j] = static_cast<int8_t>(std::round(x[j] * id));
}

// The weighted forms: each element's weight is its column's importance times
// sqrt(sigma2 + x^2), sigma2 the row's mean square.
float row_mean_square(const float* x, int64_t n) {
  float sum_x2 = 0;
  for (int64_t j = 0; j < n; ++j) sum_x2 += x[j] * x[j];
  return sum_x2 / static_cast<float>(n);
}

void element_weights(const float* x, const float* importance, float sigma2, float* weight) {
  for (int j = 0; j < kQK; ++j) weight[j] = importance[j] * std::sqrt(sigma2 + x[j] * x[j]);
}

void q4_0_weighted(const float* x, block_q4_0* y, float sigma2, const float* importance) {
  float weight[kQK];
  int8_t levels[kQK];
  element_weights(x, importance, sigma2, weight);
  y->d = fp32_to_fp16(fit_symmetric(kQK, 8, x, levels, weight));
  for (int j = 0; j < kQK / 2; ++j) y->qs[j] = static_cast<uint8_t>(levels[j] | (levels[j + kQK / 2] << 4));
}

void q4_1_weighted(const float* x, block_q4_1* y, float sigma2, const float* importance) {
  float weight[kQK], neg_min;
  uint8_t levels[kQK], scratch[kQK];
  element_weights(x, importance, sigma2, weight);
  const float d = fit_affine_weighted(kQK, 15, x, weight, levels, &neg_min, scratch, -0.9f, 0.05f, 36, false);
  y->d = fp32_to_fp16(d);
  y->m = fp32_to_fp16(-neg_min);
  for (int j = 0; j < kQK / 2; ++j) y->qs[j] = static_cast<uint8_t>(levels[j] | (levels[j + kQK / 2] << 4));
}

void q5_0_weighted(const float* x, block_q5_0* y, float sigma2, const float* importance) {
  float weight[kQK];
  int8_t levels[kQK];
  element_weights(x, importance, sigma2, weight);
  y->d = fp32_to_fp16(fit_symmetric(kQK, 16, x, levels, weight));
  uint8_t unsigned_levels[kQK];
  for (int j = 0; j < kQK; ++j) unsigned_levels[j] = static_cast<uint8_t>(levels[j]);
  put_high_bits(unsigned_levels, y->qs, y->qh);
}

void q5_1_weighted(const float* x, block_q5_1* y, float sigma2, const float* importance) {
  float weight[kQK], neg_min;
  uint8_t levels[kQK], scratch[kQK];
  element_weights(x, importance, sigma2, weight);
  const float d = fit_affine_weighted(kQK, 31, x, weight, levels, &neg_min, scratch, -0.9f, 0.05f, 36, false);
  y->d = fp32_to_fp16(d);
  y->m = fp32_to_fp16(-neg_min);
  put_high_bits(levels, y->qs, y->qh);
}

template <typename Block, typename Plain, typename Weighted>
void legacy_row(const float* x, void* dst, int64_t n, const float* importance, float sigma2, Plain plain,
                Weighted weighted) {
  auto* y = static_cast<Block*>(dst);
  const int64_t num_blocks = n / kQK;
  if (!importance) {
    for (int64_t b = 0; b < num_blocks; ++b) plain(x + b * kQK, y + b);
    return;
  }
  if (std::isnan(sigma2)) sigma2 = row_mean_square(x, n);
  for (int64_t b = 0; b < num_blocks; ++b) weighted(x + b * kQK, y + b, sigma2, importance + b * kQK);
}

}  // namespace

void quantize_legacy_row(GgmlType type, const float* x, void* dst, int64_t n, const float* importance, float sigma2) {
  switch (type) {
    case GgmlType::Q4_0: return legacy_row<block_q4_0>(x, dst, n, importance, sigma2, q4_0_plain, q4_0_weighted);
    case GgmlType::Q4_1: return legacy_row<block_q4_1>(x, dst, n, importance, sigma2, q4_1_plain, q4_1_weighted);
    case GgmlType::Q5_0: return legacy_row<block_q5_0>(x, dst, n, importance, sigma2, q5_0_plain, q5_0_weighted);
    case GgmlType::Q5_1: return legacy_row<block_q5_1>(x, dst, n, importance, sigma2, q5_1_plain, q5_1_weighted);
    case GgmlType::Q8_0: {
      auto* y = static_cast<block_q8_0*>(dst);
      for (int64_t b = 0; b < n / kQK; ++b) q8_0_plain(x + b * kQK, y + b);  // no weighted form
      return;
    }
    default: fail("%s is not a 32-element type", std::string(ggml_type_traits(type).name).c_str());
  }
}

}  // namespace pagedchat::quantize
