// KV element types: names, row sizes and the scalar row conversions.
#include "engine/backend/kv_type.h"

#include <cstring>

#include "engine/common/error.h"
#include "engine/common/float16.h"
#include "engine/quant/quant.h"

namespace pagedchat {

const char* kv_type_name(KvType type) {
  switch (type) {
    case KvType::F32: return "f32";
    case KvType::F16: return "f16";
    case KvType::Q8_0: return "q8_0";
  }
  return "unknown";
}

KvType parse_kv_type(std::string_view name) {
  for (KvType t : {KvType::F32, KvType::F16, KvType::Q8_0})
    if (name == kv_type_name(t)) return t;
  fail("KV type must be f32, f16 or q8_0 (got '%.*s')", static_cast<int>(name.size()), name.data());
}

bool kv_type_fits(KvType type, int head_dim) {
  return head_dim > 0 && (type != KvType::Q8_0 || head_dim % 32 == 0);
}

int64_t kv_row_bytes(KvType type, int head_dim) {
  switch (type) {
    case KvType::F32: return 4ll * head_dim;
    case KvType::F16: return 2ll * head_dim;
    case KvType::Q8_0: return head_dim / 32 * 34ll;
  }
  return 0;
}

int64_t kv_token_bytes(KvType type, int num_layers, int num_kv_heads, int head_dim) {
  return 2ll * num_layers * num_kv_heads * kv_row_bytes(type, head_dim);
}

void encode_kv_row(KvType type, const float* x, uint8_t* dst, int head_dim) {
  switch (type) {
    case KvType::F32: std::memcpy(dst, x, sizeof(float) * head_dim); return;
    case KvType::F16:
      for (int d = 0; d < head_dim; ++d) {
        const uint16_t h = fp32_to_fp16(x[d]);
        std::memcpy(dst + 2 * d, &h, 2);
      }
      return;
    case KvType::Q8_0: quantize_activation_row(GgmlType::Q8_0, x, dst, head_dim); return;
  }
}

void decode_kv_row(KvType type, const uint8_t* src, float* dst, int head_dim) {
  switch (type) {
    case KvType::F32: std::memcpy(dst, src, sizeof(float) * head_dim); return;
    case KvType::F16: dequantize_row(GgmlType::F16, src, dst, head_dim); return;
    case KvType::Q8_0: dequantize_row(GgmlType::Q8_0, src, dst, head_dim); return;
  }
}

}  // namespace pagedchat
