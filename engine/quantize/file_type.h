#pragma once
// The file types a model can be quantized to, as llama.cpp names and numbers them
// (llama_ftype: the number is written to the file as general.file_type, so never renumber).
// A file type is a mix: a default weight type, and rules that give some tensors more bits
// (tensor_plan.h). "Q4_K_M" is mostly Q4_K with the value projections and half the FFN down
// projections in Q6_K; "_S" mixes give fewer tensors more bits, "_L" more.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "engine/common/ggml_type.h"

namespace pagedchat::quantize {

enum class FileType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q8_0 = 7, Q5_0 = 8, Q5_1 = 9,
  Q2_K = 10, Q3_K_S = 11, Q3_K_M = 12, Q3_K_L = 13, Q4_K_S = 14, Q4_K_M = 15,
  Q5_K_S = 16, Q5_K_M = 17, Q6_K = 18, Q2_K_S = 21, IQ4_NL = 25, IQ4_XS = 30, BF16 = 32,
  MXFP4_MOE = 38,
};

struct FileTypeInfo {
  FileType type;
  std::string_view name;         // as llama-quantize spells it: "Q4_K_M"
  GgmlType default_type;         // what most matrices become
  std::string_view description;  // one line for --help and the app's list
};

std::span<const FileTypeInfo> file_types();
const FileTypeInfo& file_type_info(FileType type);
// Case-insensitive ("q4_k_m" works). nullopt for anything else.
std::optional<FileType> file_type_from_name(std::string_view name);
// "Q4_0, Q4_1, ..." for error messages.
std::string file_type_names();

}  // namespace pagedchat::quantize
