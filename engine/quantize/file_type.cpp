#include "engine/quantize/file_type.h"

#include <array>

#include "engine/common/ascii_text.h"

namespace pagedchat::quantize {

namespace {
// Largest first, as a list to choose from reads; the bits are those of a 7B-8B model (a small
// model's embedding, kept at 6-8 bits, is a larger share of its file).
constexpr std::array<FileTypeInfo, 21> kFileTypes = {{
    {FileType::F32, "F32", GgmlType::F32, "32-bit floats, unquantized"},
    {FileType::F16, "F16", GgmlType::F16, "16-bit floats"},
    {FileType::BF16, "BF16", GgmlType::BF16, "bfloat16"},
    {FileType::Q8_0, "Q8_0", GgmlType::Q8_0, "8.5 bits per weight, nearly lossless"},
    {FileType::Q6_K, "Q6_K", GgmlType::Q6_K, "6.6 bits per weight"},
    {FileType::Q5_1, "Q5_1", GgmlType::Q5_1, "6.0 bits per weight (legacy)"},
    {FileType::Q5_K_M, "Q5_K_M", GgmlType::Q5_K, "5.7 bits per weight, some tensors Q6_K"},
    {FileType::Q5_K_S, "Q5_K_S", GgmlType::Q5_K, "5.5 bits per weight"},
    {FileType::Q5_0, "Q5_0", GgmlType::Q5_0, "5.5 bits per weight (legacy)"},
    {FileType::Q4_1, "Q4_1", GgmlType::Q4_1, "5.0 bits per weight (legacy)"},
    {FileType::Q4_K_M, "Q4_K_M", GgmlType::Q4_K, "4.9 bits per weight, some tensors Q6_K: the usual choice"},
    {FileType::Q4_K_S, "Q4_K_S", GgmlType::Q4_K, "4.6 bits per weight"},
    {FileType::Q4_0, "Q4_0", GgmlType::Q4_0, "4.5 bits per weight (legacy)"},
    {FileType::IQ4_NL, "IQ4_NL", GgmlType::IQ4_NL, "4.5 bits per weight, non-linear levels"},
    {FileType::IQ4_XS, "IQ4_XS", GgmlType::IQ4_XS, "4.25 bits per weight, non-linear levels"},
    {FileType::MXFP4_MOE, "MXFP4_MOE", GgmlType::MXFP4, "a mixture's experts in MXFP4 (4.25 bits), the rest Q8_0"},
    {FileType::Q3_K_L, "Q3_K_L", GgmlType::Q3_K, "4.3 bits per weight, some tensors Q5_K"},
    {FileType::Q3_K_M, "Q3_K_M", GgmlType::Q3_K, "3.9 bits per weight, some tensors Q4_K/Q5_K"},
    {FileType::Q3_K_S, "Q3_K_S", GgmlType::Q3_K, "3.5 bits per weight"},
    {FileType::Q2_K, "Q2_K", GgmlType::Q2_K, "3.0 bits per weight, large quality loss"},
    {FileType::Q2_K_S, "Q2_K_S", GgmlType::Q2_K, "2.8 bits per weight, needs an importance matrix"},
}};
}  // namespace

std::span<const FileTypeInfo> file_types() { return kFileTypes; }

const FileTypeInfo& file_type_info(FileType type) {
  for (const auto& info : kFileTypes)
    if (info.type == type) return info;
  return kFileTypes[0];  // unreachable: every enumerator is listed
}

std::optional<FileType> file_type_from_name(std::string_view name) {
  for (const auto& info : kFileTypes)
    if (ascii_lower(std::string(info.name)) == ascii_lower(std::string(name))) return info.type;
  return std::nullopt;
}

std::string file_type_names() {
  std::string names;
  for (const auto& info : kFileTypes) {
    if (!names.empty()) names += ", ";
    names += info.name;
  }
  return names;
}

}  // namespace pagedchat::quantize
