#include "engine/quantize/quantize_rows.h"

#include <cstring>
#include <string>

#include "engine/common/error.h"
#include "engine/common/float16.h"

namespace pagedchat::quantize {

bool can_write(GgmlType type) {
  switch (type) {
    case GgmlType::F32: case GgmlType::F16: case GgmlType::BF16:
    case GgmlType::Q4_0: case GgmlType::Q4_1: case GgmlType::Q5_0: case GgmlType::Q5_1: case GgmlType::Q8_0:
    case GgmlType::Q2_K: case GgmlType::Q3_K: case GgmlType::Q4_K: case GgmlType::Q5_K: case GgmlType::Q6_K:
    case GgmlType::IQ4_NL: case GgmlType::IQ4_XS: case GgmlType::MXFP4:
      return true;
    default:
      return false;
  }
}

void quantize_rows(GgmlType type, const float* src, void* dst, int64_t rows, int64_t row_length,
                   const float* importance) {
  const auto traits = ggml_type_traits(type);
  if (!can_write(type)) fail("cannot write %s tensors", std::string(traits.name).c_str());
  if (row_length % traits.block_size != 0)
    fail("a row of %lld is not a whole number of %s blocks", (long long)row_length, std::string(traits.name).c_str());
  const size_t row_bytes = ggml_row_size(type, row_length);
  auto* out = static_cast<uint8_t*>(dst);
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = src + r * row_length;
    uint8_t* y = out + static_cast<size_t>(r) * row_bytes;
    switch (type) {
      case GgmlType::F32:
        std::memcpy(y, x, row_bytes);
        break;
      case GgmlType::F16:
        for (int64_t i = 0; i < row_length; ++i) {
          const uint16_t h = fp32_to_fp16(x[i]);
          std::memcpy(y + 2 * i, &h, 2);
        }
        break;
      case GgmlType::BF16:
        for (int64_t i = 0; i < row_length; ++i) {
          const uint16_t b = fp32_to_bf16(x[i]);
          std::memcpy(y + 2 * i, &b, 2);
        }
        break;
      case GgmlType::Q2_K: case GgmlType::Q3_K: case GgmlType::Q4_K: case GgmlType::Q5_K: case GgmlType::Q6_K:
        quantize_k_row(type, x, y, row_length, importance);
        break;
      case GgmlType::IQ4_NL: case GgmlType::IQ4_XS: case GgmlType::MXFP4:
        quantize_nonlinear_row(type, x, y, row_length, importance);
        break;
      default:
        quantize_legacy_row(type, x, y, row_length, importance);
        break;
    }
  }
}

bool uses_row_mean_square(GgmlType type) {
  return type == GgmlType::Q4_0 || type == GgmlType::Q4_1 || type == GgmlType::Q5_0 || type == GgmlType::Q5_1;
}

}  // namespace pagedchat::quantize
