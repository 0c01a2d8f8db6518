#pragma once
// The element types of the CPU KV pool and what a row of each costs. A "row" is the head_dim
// values of one (layer, slot, kv head) of K or V. Why three: decode attention at long context
// is bound by the KV bytes it reads (f32 is 2x llama.cpp's f16 default); f16 halves them
// exactly-enough, q8_0 (GGUF's Q8_0 blocks: 32 int8 with one fp16 scale, 34 bytes) nearly
// halves them again; f32 stays as the reference path the float64 tests compare to.

#include <cstdint>
#include <string>
#include <string_view>

namespace pagedchat {

enum class KvType : uint8_t { F32, F16, Q8_0 };

const char* kv_type_name(KvType type);  // "f32", "f16", "q8_0"
// Throws Error naming the accepted spellings.
KvType parse_kv_type(std::string_view name);
// Whether rows of head_dim elements can be stored (q8_0 needs a multiple of 32).
bool kv_type_fits(KvType type, int head_dim);
// Bytes of one row; precondition: kv_type_fits.
int64_t kv_row_bytes(KvType type, int head_dim);
// Bytes of one token's K and V over all layers: what the pool spends on a token.
int64_t kv_token_bytes(KvType type, int num_layers, int num_kv_heads, int head_dim);

// Scalar conversions of one row, the reference the attention kernels' loaders match bit for bit
// (f16: round to nearest even; q8_0: quantize_activation_row's Q8_0 rule).
void encode_kv_row(KvType type, const float* x, uint8_t* dst, int head_dim);
void decode_kv_row(KvType type, const uint8_t* src, float* dst, int head_dim);

}  // namespace pagedchat
