// The public entry points of quant.h: check the type and length once, then run the AVX2 path
// when it is compiled in and the CPU has it, else the scalar reference.

#include "engine/quant/quant.h"

#include <string>

#include "engine/common/error.h"
#include "engine/quant/quant_avx2.h"

namespace pagedchat {
namespace {

#if defined(PAGEDCHAT_QUANT_AVX2)
bool use_avx2() {
  static const bool supported = quant_avx2::cpu_supported();
  return supported;
}
#else
constexpr bool use_avx2() { return false; }
#endif

std::string type_name(GgmlType type) {
  return std::string(ggml_type_name(static_cast<uint32_t>(type)));
}

bool is_weight_type(GgmlType type) {
  switch (type) {
    case GgmlType::F32: case GgmlType::F16: case GgmlType::BF16:
    case GgmlType::Q4_0: case GgmlType::Q4_1: case GgmlType::Q5_0: case GgmlType::Q5_1:
    case GgmlType::Q8_0: case GgmlType::Q4_K: case GgmlType::Q5_K: case GgmlType::Q6_K:
    case GgmlType::Q2_K: case GgmlType::Q3_K: case GgmlType::IQ4_NL: case GgmlType::IQ4_XS: case GgmlType::MXFP4:
      return true;
    default:
      return false;
  }
}

// Weights of an unsupported type or a length that splits a block come from a model file.
void check_weight_row(GgmlType type, int64_t n) {
  if (!is_weight_type(type)) fail("tensor type %s is not supported for matrix products", type_name(type).c_str());
  const int64_t block = ggml_type_traits(type).block_size;
  if (n < 0 || n % block != 0) {
    fail("row of %lld elements is not a whole number of %s blocks (%lld)", static_cast<long long>(n),
         type_name(type).c_str(), static_cast<long long>(block));
  }
}

}  // namespace

#if defined(PAGEDCHAT_QUANT_AVX2)
bool quant_avx2::cpu_supported() {
#if PAGEDCHAT_QUANT_AVX2 == 1
  return true;  // the whole build already requires these instructions
#else
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
#endif
}
#endif

void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
  const bool activation = type == GgmlType::Q8_1 || type == GgmlType::Q8_K;
  if (!activation) check_weight_row(type, n);
#if defined(PAGEDCHAT_QUANT_AVX2)
  if (use_avx2()) return quant_avx2::dequantize_row(type, src, dst, n);
#endif
  reference::dequantize_row(type, src, dst, n);
}

GgmlType dot_activation_type(GgmlType weight_type) {
  switch (weight_type) {
    case GgmlType::F32: case GgmlType::F16: case GgmlType::BF16: return GgmlType::F32;
    case GgmlType::Q4_0: case GgmlType::Q5_0: case GgmlType::Q8_0: case GgmlType::IQ4_NL: case GgmlType::MXFP4:
      return GgmlType::Q8_0;
    case GgmlType::Q4_1: case GgmlType::Q5_1: return GgmlType::Q8_1;
    case GgmlType::Q4_K: case GgmlType::Q5_K: case GgmlType::Q6_K: case GgmlType::Q2_K: case GgmlType::Q3_K:
    case GgmlType::IQ4_XS:
      return GgmlType::Q8_K;
    default: break;
  }
  fail("tensor type %s is not supported for matrix products", type_name(weight_type).c_str());
}

size_t activation_row_size(GgmlType weight_type, int64_t n) {
  check_weight_row(weight_type, n);
  return ggml_row_size(dot_activation_type(weight_type), n);
}

void quantize_activation_row(GgmlType weight_type, const float* x, void* dst, int64_t n) {
  check_weight_row(weight_type, n);
#if defined(PAGEDCHAT_QUANT_AVX2)
  if (use_avx2()) return quant_avx2::quantize_activation_row(weight_type, x, dst, n);
#endif
  reference::quantize_activation_row(weight_type, x, dst, n);
}

float vec_dot(GgmlType weight_type, int64_t n, const void* weight_row, const void* activation_row) {
  float out = 0.0f;
  vec_dot_rows(weight_type, n, weight_row, 0, 1, activation_row, &out);
  return out;
}

void vec_dot_rows(GgmlType weight_type, int64_t n, const void* w, size_t weight_row_stride,
                  int64_t num_rows, const void* activation_row, float* out, WeightAccess access) {
  check_weight_row(weight_type, n);
#if defined(PAGEDCHAT_QUANT_AVX2)
  if (use_avx2() && quant_avx2::has_vec_dot(weight_type)) {
    return quant_avx2::vec_dot_rows(weight_type, n, w, weight_row_stride, num_rows, activation_row, out, access);
  }
#endif
  for (int64_t r = 0; r < num_rows; ++r) {
    out[r] = reference::vec_dot(weight_type, n, static_cast<const uint8_t*>(w) + r * weight_row_stride,
                                activation_row);
  }
}

const char* quant_simd_name() { return use_avx2() ? "avx2" : "scalar"; }

}  // namespace pagedchat
