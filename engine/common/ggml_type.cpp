// The table of GGML tensor types: names, block sizes, bytes per block.
#include "engine/common/ggml_type.h"

#include <cassert>

namespace pagedchat {

std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type_id) {
  switch (static_cast<GgmlType>(type_id)) {
    case GgmlType::F32: return GgmlTypeTraits{"F32", 1, 4, true};
    case GgmlType::F16: return GgmlTypeTraits{"F16", 1, 2, true};
    case GgmlType::BF16: return GgmlTypeTraits{"BF16", 1, 2, true};
    case GgmlType::Q4_0: return GgmlTypeTraits{"Q4_0", 32, 18, true};
    case GgmlType::Q4_1: return GgmlTypeTraits{"Q4_1", 32, 20, true};
    case GgmlType::Q5_0: return GgmlTypeTraits{"Q5_0", 32, 22, true};
    case GgmlType::Q5_1: return GgmlTypeTraits{"Q5_1", 32, 24, true};
    case GgmlType::Q8_0: return GgmlTypeTraits{"Q8_0", 32, 34, true};
    case GgmlType::Q8_1: return GgmlTypeTraits{"Q8_1", 32, 36, false};
    case GgmlType::Q2_K: return GgmlTypeTraits{"Q2_K", 256, 84, true};
    case GgmlType::Q3_K: return GgmlTypeTraits{"Q3_K", 256, 110, true};
    case GgmlType::Q4_K: return GgmlTypeTraits{"Q4_K", 256, 144, true};
    case GgmlType::Q5_K: return GgmlTypeTraits{"Q5_K", 256, 176, true};
    case GgmlType::Q6_K: return GgmlTypeTraits{"Q6_K", 256, 210, true};
    case GgmlType::Q8_K: return GgmlTypeTraits{"Q8_K", 256, 292, false};
    case GgmlType::IQ4_NL: return GgmlTypeTraits{"IQ4_NL", 32, 18, true};
    // Known, so that a file holding them is read and refused by name, but not computed with.
    case GgmlType::IQ2_XXS: return GgmlTypeTraits{"IQ2_XXS", 256, 66, false};
    case GgmlType::IQ2_XS: return GgmlTypeTraits{"IQ2_XS", 256, 74, false};
    case GgmlType::IQ3_XXS: return GgmlTypeTraits{"IQ3_XXS", 256, 98, false};
    case GgmlType::IQ1_S: return GgmlTypeTraits{"IQ1_S", 256, 50, false};
    case GgmlType::IQ3_S: return GgmlTypeTraits{"IQ3_S", 256, 110, false};
    case GgmlType::IQ2_S: return GgmlTypeTraits{"IQ2_S", 256, 82, false};
    case GgmlType::IQ1_M: return GgmlTypeTraits{"IQ1_M", 256, 56, false};
    case GgmlType::TQ1_0: return GgmlTypeTraits{"TQ1_0", 256, 54, false};
    case GgmlType::TQ2_0: return GgmlTypeTraits{"TQ2_0", 256, 66, false};
    case GgmlType::IQ4_XS: return GgmlTypeTraits{"IQ4_XS", 256, 136, true};
    case GgmlType::MXFP4: return GgmlTypeTraits{"MXFP4", 32, 17, true};
  }
  return std::nullopt;
}

GgmlTypeTraits ggml_type_traits(GgmlType type) {
  auto t = ggml_type_traits(static_cast<uint32_t>(type));
  assert(t);
  return *t;
}

std::string_view ggml_type_name(uint32_t type_id) {
  auto t = ggml_type_traits(type_id);
  return t ? t->name : std::string_view("unknown");
}

size_t ggml_row_size(GgmlType type, int64_t n) {
  auto t = ggml_type_traits(type);
  assert(n % t.block_size == 0);
  return static_cast<size_t>(n / t.block_size) * t.type_size;
}

}  // namespace pagedchat
