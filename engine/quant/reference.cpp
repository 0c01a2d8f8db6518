// Plain scalar versions of dequantization, activation quantization and the dot products,
// written to be read; the SIMD paths are tested against them. See quant.h.

#include <cstring>

#include "engine/common/error.h"
#include "engine/quant/quant.h"
#include "engine/quant/quant_blocks.h"

namespace pagedchat::reference {
namespace {

template <typename Block>
void dequantize_blocks(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const Block*>(src);
  for (int64_t i = 0; i < n / Block::num_elements; ++i) {
    dequantize_block(blocks[i], dst + i * Block::num_elements);
  }
}

// ---- activation quantization -------------------------------------------------------------

void quantize_q8_0(const float* x, block_q8_0* y, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    y[i].d = fp32_to_fp16(amax / 127.0f);
    const float inverse = inverse_or_zero(fp16_to_fp32(y[i].d));
    for (int j = 0; j < kQK; ++j) y[i].qs[j] = quantize_q8_value(x[j], inverse);
  }
}

void quantize_q8_1(const float* x, block_q8_1* y, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    y[i].d = fp32_to_fp16(amax / 127.0f);
    const float d = fp16_to_fp32(y[i].d);
    const float inverse = inverse_or_zero(d);
    int sum = 0;
    for (int j = 0; j < kQK; ++j) {
      y[i].qs[j] = quantize_q8_value(x[j], inverse);
      sum += y[i].qs[j];
    }
    y[i].s = fp32_to_fp16(d * static_cast<float>(sum));
  }
}

void quantize_q8_K(const float* x, block_q8_K* y, int64_t n) {
  for (int64_t i = 0; i < n / kQKK; ++i, x += kQKK) {
    float amax = 0.0f;
    for (int j = 0; j < kQKK; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    y[i].d = amax / 127.0f;
    const float inverse = inverse_or_zero(y[i].d);
    for (int j = 0; j < kQKK; ++j) y[i].qs[j] = quantize_q8_value(x[j], inverse);
    for (int g = 0; g < kQKK / 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += y[i].qs[16 * g + j];
      y[i].bsums[g] = static_cast<int16_t>(sum);
    }
  }
}

// ---- dot products ------------------------------------------------------------------------
// Each block's integer dot product is exact; the float steps per block are the scale product,
// the conversion of the integer sum and one multiply-add into a running float sum.

// 32-element blocks whose quants are signed (Q4_0, Q5_0, Q8_0) against Q8_0.
template <typename Block, typename Quant>
float dot_symmetric(int64_t n, const void* w, const void* a, Quant quant) {
  const auto* x = static_cast<const Block*>(w);
  const auto* y = static_cast<const block_q8_0*>(a);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK; ++i) {
    int sumi = 0;
    for (int j = 0; j < kQK; ++j) sumi += quant(x[i], j) * y[i].qs[j];
    sum += fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d) * static_cast<float>(sumi);
  }
  return sum;
}

// 32-element blocks with a minimum (Q4_1, Q5_1) against Q8_1: sum_j (d q_j + m) a_j
// = d d_a sum_j q_j q_a_j + m s_a.
template <typename Block, typename Quant>
float dot_with_min(int64_t n, const void* w, const void* a, Quant quant) {
  const auto* x = static_cast<const Block*>(w);
  const auto* y = static_cast<const block_q8_1*>(a);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK; ++i) {
    int sumi = 0;
    for (int j = 0; j < kQK; ++j) sumi += quant(x[i], j) * y[i].qs[j];
    sum += fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d) * static_cast<float>(sumi) +
           fp16_to_fp32(x[i].m) * fp16_to_fp32(y[i].s);
  }
  return sum;
}

// Q4_K/Q5_K against Q8_K: per super-block d d_a sum_s scale_s (q . q_a)_s
// - dmin d_a sum_s min_s (sum of q_a)_s.
template <typename Block, typename Quant>
float dot_k_with_min(int64_t n, const void* w, const void* a, Quant quant) {
  const auto* x = static_cast<const Block*>(w);
  const auto* y = static_cast<const block_q8_K*>(a);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQKK; ++i) {
    int sumi = 0, summins = 0;
    for (int sub = 0; sub < 8; ++sub) {
      uint8_t scale, min;
      get_scale_min_k4(sub, x[i].scales, &scale, &min);
      int dot = 0, sum_a = 0;
      for (int l = 0; l < 32; ++l) {
        dot += quant(x[i], 32 * sub + l) * y[i].qs[32 * sub + l];
        sum_a += y[i].qs[32 * sub + l];
      }
      sumi += scale * dot;
      summins += min * sum_a;
    }
    const float d = y[i].d * fp16_to_fp32(x[i].d);
    const float dmin = y[i].d * fp16_to_fp32(x[i].dmin);
    sum += d * static_cast<float>(sumi) - dmin * static_cast<float>(summins);
  }
  return sum;
}

// 32-element blocks of levels (IQ4_NL: fp16 d; MXFP4: a power of two) against Q8_0:
// scale * d_a * sum_j level_j q_a_j.
template <typename Block, typename Quant, typename Scale>
float dot_levels(int64_t n, const void* w, const void* a, Quant quant, Scale scale) {
  const auto* x = static_cast<const Block*>(w);
  const auto* y = static_cast<const block_q8_0*>(a);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK; ++i) {
    int sumi = 0;
    for (int j = 0; j < kQK; ++j) sumi += quant(x[i], j) * y[i].qs[j];
    sum += scale(x[i]) * fp16_to_fp32(y[i].d) * static_cast<float>(sumi);
  }
  return sum;
}

// Q2_K against Q8_K: per super-block d d_a sum_g scale_g (q . q_a)_g - dmin d_a sum_g min_g bsum_g.
float dot_q2_K(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const block_q2_K*>(w);
  const auto* y = static_cast<const block_q8_K*>(a);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQKK; ++i) {
    int sumi = 0, summins = 0;
    for (int g = 0; g < 16; ++g) {
      int dot = 0;
      for (int l = 0; l < 16; ++l) dot += quant_q2_K(x[i], 16 * g + l) * y[i].qs[16 * g + l];
      sumi += (x[i].scales[g] & 0x0f) * dot;
      summins += (x[i].scales[g] >> 4) * y[i].bsums[g];
    }
    const float d = y[i].d * fp16_to_fp32(x[i].d);
    const float dmin = y[i].d * fp16_to_fp32(x[i].dmin);
    sum += d * static_cast<float>(sumi) - dmin * static_cast<float>(summins);
  }
  return sum;
}

// Super-blocks without a minimum against Q8_K: per super-block d d_a sum_g scale_g (q . q_a)_g,
// over groups of kGroup elements: Q3_K and Q6_K (16), IQ4_XS (32).
template <typename Block, int kGroup, typename Quant, typename Scale>
float dot_k_scaled(int64_t n, const void* w, const void* a, Quant quant, Scale scale) {
  const auto* x = static_cast<const Block*>(w);
  const auto* y = static_cast<const block_q8_K*>(a);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQKK; ++i) {
    int sumi = 0;
    for (int g = 0; g < kQKK / kGroup; ++g) {
      int dot = 0;
      for (int l = 0; l < kGroup; ++l) dot += quant(x[i], kGroup * g + l) * y[i].qs[kGroup * g + l];
      sumi += scale(x[i], g) * dot;
    }
    sum += y[i].d * fp16_to_fp32(x[i].d) * static_cast<float>(sumi);
  }
  return sum;
}

template <typename ToFloat>
float dot_float(int64_t n, const uint16_t* w, const float* a, ToFloat to_float) {
  float sum = 0.0f;
  for (int64_t j = 0; j < n; ++j) sum += to_float(w[j]) * a[j];
  return sum;
}

}  // namespace

void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
  switch (type) {
    case GgmlType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); return;
    case GgmlType::F16:
      for (int64_t j = 0; j < n; ++j) dst[j] = fp16_to_fp32(static_cast<const uint16_t*>(src)[j]);
      return;
    case GgmlType::BF16:
      for (int64_t j = 0; j < n; ++j) dst[j] = bf16_to_fp32(static_cast<const uint16_t*>(src)[j]);
      return;
    case GgmlType::Q4_0: return dequantize_blocks<block_q4_0>(src, dst, n);
    case GgmlType::Q4_1: return dequantize_blocks<block_q4_1>(src, dst, n);
    case GgmlType::Q5_0: return dequantize_blocks<block_q5_0>(src, dst, n);
    case GgmlType::Q5_1: return dequantize_blocks<block_q5_1>(src, dst, n);
    case GgmlType::Q8_0: return dequantize_blocks<block_q8_0>(src, dst, n);
    case GgmlType::Q8_1: return dequantize_blocks<block_q8_1>(src, dst, n);
    case GgmlType::Q4_K: return dequantize_blocks<block_q4_K>(src, dst, n);
    case GgmlType::Q5_K: return dequantize_blocks<block_q5_K>(src, dst, n);
    case GgmlType::Q6_K: return dequantize_blocks<block_q6_K>(src, dst, n);
    case GgmlType::Q8_K: return dequantize_blocks<block_q8_K>(src, dst, n);
    case GgmlType::Q2_K: return dequantize_blocks<block_q2_K>(src, dst, n);
    case GgmlType::Q3_K: return dequantize_blocks<block_q3_K>(src, dst, n);
    case GgmlType::IQ4_NL: return dequantize_blocks<block_iq4_nl>(src, dst, n);
    case GgmlType::IQ4_XS: return dequantize_blocks<block_iq4_xs>(src, dst, n);
    case GgmlType::MXFP4: return dequantize_blocks<block_mxfp4>(src, dst, n);
    default: break;
  }
  fail("cannot dequantize tensor type %s", std::string(ggml_type_name(static_cast<uint32_t>(type))).c_str());
}

void quantize_activation_row(GgmlType weight_type, const float* x, void* dst, int64_t n) {
  switch (dot_activation_type(weight_type)) {
    case GgmlType::F32: std::memcpy(dst, x, static_cast<size_t>(n) * sizeof(float)); return;
    case GgmlType::Q8_0: return quantize_q8_0(x, static_cast<block_q8_0*>(dst), n);
    case GgmlType::Q8_1: return quantize_q8_1(x, static_cast<block_q8_1*>(dst), n);
    case GgmlType::Q8_K: return quantize_q8_K(x, static_cast<block_q8_K*>(dst), n);
    default: break;
  }
  fail("no activation format for tensor type %s", std::string(ggml_type_name(static_cast<uint32_t>(weight_type))).c_str());
}

float vec_dot(GgmlType weight_type, int64_t n, const void* w, const void* a) {
  const auto* af = static_cast<const float*>(a);
  const auto* w16 = static_cast<const uint16_t*>(w);
  switch (weight_type) {
    case GgmlType::F32: {
      const auto* wf = static_cast<const float*>(w);
      float sum = 0.0f;
      for (int64_t j = 0; j < n; ++j) sum += wf[j] * af[j];
      return sum;
    }
    case GgmlType::F16: return dot_float(n, w16, af, fp16_to_fp32);
    case GgmlType::BF16: return dot_float(n, w16, af, bf16_to_fp32);
    case GgmlType::Q4_0: return dot_symmetric<block_q4_0>(n, w, a, quant_q4_0);
    case GgmlType::Q5_0: return dot_symmetric<block_q5_0>(n, w, a, quant_q5_0);
    case GgmlType::Q8_0:
      return dot_symmetric<block_q8_0>(n, w, a, [](const block_q8_0& b, int j) { return int{b.qs[j]}; });
    case GgmlType::Q4_1: return dot_with_min<block_q4_1>(n, w, a, quant_q4_1);
    case GgmlType::Q5_1: return dot_with_min<block_q5_1>(n, w, a, quant_q5_1);
    case GgmlType::Q4_K: return dot_k_with_min<block_q4_K>(n, w, a, quant_q4_K);
    case GgmlType::Q5_K: return dot_k_with_min<block_q5_K>(n, w, a, quant_q5_K);
    case GgmlType::Q6_K:
      return dot_k_scaled<block_q6_K, 16>(n, w, a, quant_q6_K, [](const block_q6_K& b, int g) { return int{b.scales[g]}; });
    case GgmlType::Q2_K: return dot_q2_K(n, w, a);
    case GgmlType::Q3_K:
      return dot_k_scaled<block_q3_K, 16>(n, w, a, quant_q3_K,
                                          [](const block_q3_K& b, int g) { return get_scale_q3_K(b.scales, g); });
    case GgmlType::IQ4_XS: return dot_k_scaled<block_iq4_xs, 32>(n, w, a, quant_iq4_xs, get_scale_iq4_xs);
    case GgmlType::IQ4_NL:
      return dot_levels<block_iq4_nl>(n, w, a, quant_iq4_nl, [](const block_iq4_nl& b) { return fp16_to_fp32(b.d); });
    case GgmlType::MXFP4:
      return dot_levels<block_mxfp4>(n, w, a, quant_mxfp4, [](const block_mxfp4& b) { return e8m0_half(b.e); });
    default: break;
  }
  fail("no dot product for tensor type %s", std::string(ggml_type_name(static_cast<uint32_t>(weight_type))).c_str());
}

}  // namespace pagedchat::reference
