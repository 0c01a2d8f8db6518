#pragma once
// Tensor element types as numbered in the GGUF format (values written to disk: never renumber).
// Quantized types store blocks of `block_size` elements in `type_size` bytes.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace pagedchat {

enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
};

struct GgmlTypeTraits {
  std::string_view name;
  int64_t block_size;  // elements per block
  size_t type_size;    // bytes per block
  bool computable;     // we can dequantize it and use it as a weight
};

// Traits of a type id read from a file; nullopt for an id we do not know.
std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type_id);
GgmlTypeTraits ggml_type_traits(GgmlType type);  // for known types only
std::string_view ggml_type_name(uint32_t type_id);

// Bytes of a row of `n` elements; n must be a multiple of the block size.
size_t ggml_row_size(GgmlType type, int64_t n);

}  // namespace pagedchat
