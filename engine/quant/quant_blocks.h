#pragma once
// Block layouts of the quantized GGUF types, byte for byte as ggml stores them, and the
// dequantization of one element / one block. Written once (PC_HOST_DEVICE) so the CPU
// reference, the SIMD paths and the CUDA kernels share the exact float math.
//
// fp16 fields are kept as raw uint16_t bits. All structs have alignment <= 4, and rows of
// blocks are packed without padding, so sizeof(block) is the GGUF type size.

#include <cmath>
#include <cstdint>
#include <cstring>

#include "engine/common/float16.h"

namespace pagedchat {

inline constexpr int kQK = 32;    // elements per block of the 32-element types
inline constexpr int kQKK = 256;  // elements per super-block of the K-quants

// ---- 32-element blocks ------------------------------------------------------------------
// In the 4-bit types, qs[j] holds element j in its low nibble and element j + 16 in its high
// nibble. The 5-bit types add bit 4 of element j as bit j of the little-endian qh word.

struct block_q4_0 {
  static constexpr int num_elements = kQK;
  uint16_t d;            // fp16 scale; x = d * (q - 8)
  uint8_t qs[kQK / 2];
};
struct block_q4_1 {
  static constexpr int num_elements = kQK;
  uint16_t d;            // fp16 scale
  uint16_t m;            // fp16 minimum; x = d * q + m
  uint8_t qs[kQK / 2];
};
struct block_q5_0 {
  static constexpr int num_elements = kQK;
  uint16_t d;            // x = d * (q - 16)
  uint8_t qh[4];         // bit 4 of each element (uint32 little-endian, bit j = element j)
  uint8_t qs[kQK / 2];
};
struct block_q5_1 {
  static constexpr int num_elements = kQK;
  uint16_t d;            // x = d * q + m
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
struct block_q8_0 {
  static constexpr int num_elements = kQK;
  uint16_t d;            // x = d * q
  int8_t qs[kQK];
};
// Activation format for Q4_1/Q5_1 weights: s = d * sum(qs), so the weight minimum m
// contributes m * s to a block's dot product without touching the quants.
struct block_q8_1 {
  static constexpr int num_elements = kQK;
  uint16_t d;
  uint16_t s;
  int8_t qs[kQK];
};

// IQ4_NL: 16 non-uniform levels (iq4_level), nibbles laid out as Q4_0's; x = d * level(q).
struct block_iq4_nl {
  static constexpr int num_elements = kQK;
  uint16_t d;
  uint8_t qs[kQK / 2];
};
// MXFP4 (OCP microscaling, gpt-oss's experts): a power-of-two scale e (E8M0) and 4-bit E2M1
// values, nibbles laid out as Q4_0's; x = 2^(e - 128) * fp4_level(q), the levels doubled (0, 1,
// 2, 3, 4, 6, 8, 12 and their negatives) so they are integers, and the scale halved to match.
struct block_mxfp4 {
  static constexpr int num_elements = kQK;
  uint8_t e;
  uint8_t qs[kQK / 2];
};

// ---- 256-element super-blocks (K-quants) ------------------------------------------------
// Q2_K: 16 groups of 16, each with a 4-bit scale (low nibble) and a 4-bit min (high nibble) in
// scales[g]; x = d * scale * q - dmin * min, q 2 bits. For each half h (128 elements) the 2-bit
// quants of elements 128h + 32k + l (k < 4, l < 32) are bits 2k..2k+1 of qs[32h + l].
struct block_q2_K {
  static constexpr int num_elements = kQKK;
  uint8_t scales[kQKK / 16];
  uint8_t qs[kQKK / 4];
  uint16_t d;
  uint16_t dmin;
};
// Q3_K: 16 groups of 16 with 6-bit scales (minus 32) packed in 12 bytes (get_scale_q3_K);
// x = d * scale * q, q = low 2 bits (laid out as Q2_K's) - 4 unless the element's bit of hmask
// is set: bit 4h + k of hmask[l] for element 128h + 32k + l.
struct block_q3_K {
  static constexpr int num_elements = kQKK;
  uint8_t hmask[kQKK / 8];
  uint8_t qs[kQKK / 4];
  uint8_t scales[12];
  uint16_t d;
};
// IQ4_XS: 8 sub-blocks of 32 with 6-bit scales (minus 32): low 4 bits in scales_l (nibble
// ib % 2 of byte ib / 2), top 2 bits at bits 2ib of scales_h; each sub-block's 16 bytes of qs
// hold its nibbles as Q4_0's do; x = (d * scale) * iq4_level(q).
struct block_iq4_xs {
  static constexpr int num_elements = kQKK;
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[kQKK / 64];
  uint8_t qs[kQKK / 2];
};
// Q4_K/Q5_K: 8 sub-blocks of 32, each with a 6-bit scale and a 6-bit min packed into 12
// bytes (see get_scale_min_k4); x = d * scale * q - dmin * min. The quants of sub-blocks
// 2c and 2c+1 share qs[32c .. 32c+31]: low nibbles for 2c, high nibbles for 2c+1.
struct block_q4_K {
  static constexpr int num_elements = kQKK;
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qs[kQKK / 2];
};
struct block_q5_K {
  static constexpr int num_elements = kQKK;
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQKK / 8];  // bit s of qh[l] is bit 4 of element 32 s + l
  uint8_t qs[kQKK / 2];
};
// Q6_K: 16 groups of 16 with signed 8-bit scales; x = d * scale * (q - 32), q 6 bits.
// For each half h (128 elements) and l in [0, 32), ql/qh hold, for elements 128h + 32k + l:
// k=0: ql[64h + l] low, k=1: ql[64h + 32 + l] low, k=2: ql[64h + l] high,
// k=3: ql[64h + 32 + l] high; the top 2 bits are (qh[32h + l] >> 2k) & 3.
struct block_q6_K {
  static constexpr int num_elements = kQKK;
  uint8_t ql[kQKK / 2];
  uint8_t qh[kQKK / 4];
  int8_t scales[kQKK / 16];
  uint16_t d;
};
// Activation format for the K-quants: float scale, and the sums of each 16 quants.
struct block_q8_K {
  static constexpr int num_elements = kQKK;
  float d;
  int8_t qs[kQKK];
  int16_t bsums[kQKK / 16];
};

static_assert(sizeof(block_q4_0) == 18);
static_assert(sizeof(block_q4_1) == 20);
static_assert(sizeof(block_q5_0) == 22);
static_assert(sizeof(block_q5_1) == 24);
static_assert(sizeof(block_q8_0) == 34);
static_assert(sizeof(block_q8_1) == 36);
static_assert(sizeof(block_q4_K) == 144);
static_assert(sizeof(block_q5_K) == 176);
static_assert(sizeof(block_q6_K) == 210);
static_assert(sizeof(block_q8_K) == 292);
static_assert(sizeof(block_iq4_nl) == 18);
static_assert(sizeof(block_mxfp4) == 17);
static_assert(sizeof(block_q2_K) == 84);
static_assert(sizeof(block_q3_K) == 110);
static_assert(sizeof(block_iq4_xs) == 136);

// ---- unpacking -----------------------------------------------------------------------------

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K/Q5_K super-block. Bytes 0-3 hold
// scales 0-3, bytes 4-7 mins 0-3 (low 6 bits each); scales/mins 4-7 take their low 4 bits
// from bytes 8-11 (scale low nibble, min high nibble) and their top 2 bits from the top 2
// bits of bytes 0-3 (scales) and 4-7 (mins).
PC_HOST_DEVICE inline void get_scale_min_k4(int j, const uint8_t* scales, uint8_t* scale,
                                            uint8_t* min) {
  if (j < 4) {
    *scale = scales[j] & 63;
    *min = scales[j + 4] & 63;
  } else {
    *scale = static_cast<uint8_t>((scales[j + 4] & 0x0f) | ((scales[j - 4] >> 6) << 4));
    *min = static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

PC_HOST_DEVICE inline uint32_t load_qh32(const uint8_t* qh) {
  return static_cast<uint32_t>(qh[0]) | static_cast<uint32_t>(qh[1]) << 8 |
         static_cast<uint32_t>(qh[2]) << 16 | static_cast<uint32_t>(qh[3]) << 24;
}

// Unsigned 4-bit quant of element j (0..31) of a 32-element block.
PC_HOST_DEVICE inline int nibble32(const uint8_t* qs, int j) {
  return j < 16 ? (qs[j] & 0x0f) : (qs[j - 16] >> 4);
}

// The 16 levels of IQ4_NL and IQ4_XS (ggml's kvalues_iq4nl) and MXFP4's doubled E2M1 values
// (kvalues_mxfp4), packed in two words so that device code can index them too.
PC_HOST_DEVICE inline int level_of(uint64_t low8, uint64_t high8, int q) {
  return static_cast<int8_t>(((q < 8 ? low8 : high8) >> (8 * (q & 7))) & 0xff);
}
PC_HOST_DEVICE inline int iq4_level(int q) {
  // -127, -104, -83, -65, -49, -35, -22, -10 | 1, 13, 25, 38, 53, 69, 89, 113
  return level_of(0xf6eaddcfbfad9881ull, 0x7159453526190d01ull, q);
}
PC_HOST_DEVICE inline int fp4_level(int q) {
  // 0, 1, 2, 3, 4, 6, 8, 12 | 0, -1, -2, -3, -4, -6, -8, -12
  return level_of(0x0c08060403020100ull, 0xf4f8fafcfdfeff00ull, q);
}

// MXFP4's scale 2^(e - 127), halved for the doubled levels: 2^(e - 128), exact for every e
// (e 0 and 1 are subnormal floats), as ggml_e8m0_to_fp32_half computes it.
PC_HOST_DEVICE inline float e8m0_half(uint8_t e) {
  const uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

// The 6-bit scale of group g (0..15) of a Q3_K super-block, minus 32: the low 4 bits are a
// nibble of bytes 0-7 (groups 0-3: low nibbles of 0-3, 4-7: of 4-7, 8-11: high nibbles of 0-3,
// 12-15: of 4-7), the top 2 bits are bits 2 (g / 4) of byte 8 + g % 4.
PC_HOST_DEVICE inline int get_scale_q3_K(const uint8_t* scales, int g) {
  const int j = g % 4, quarter = g / 4;
  const int low = (scales[j + 4 * (quarter % 2)] >> (4 * (quarter / 2))) & 0x0f;
  const int high = (scales[8 + j] >> (2 * quarter)) & 3;
  return (low | high << 4) - 32;
}

// The 6-bit scale of sub-block ib (0..7) of an IQ4_XS super-block, minus 32.
PC_HOST_DEVICE inline int get_scale_iq4_xs(const block_iq4_xs& b, int ib) {
  const int low = (b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0f;
  const int high = (b.scales_h >> (2 * ib)) & 3;
  return (low | high << 4) - 32;
}
PC_HOST_DEVICE inline int quant_q4_0(const block_q4_0& b, int j) { return nibble32(b.qs, j) - 8; }
PC_HOST_DEVICE inline int quant_q4_1(const block_q4_1& b, int j) { return nibble32(b.qs, j); }
PC_HOST_DEVICE inline int quant_q5_0(const block_q5_0& b, int j) {
  return (nibble32(b.qs, j) | static_cast<int>((load_qh32(b.qh) >> j) & 1u) << 4) - 16;
}
PC_HOST_DEVICE inline int quant_q5_1(const block_q5_1& b, int j) {
  return nibble32(b.qs, j) | static_cast<int>((load_qh32(b.qh) >> j) & 1u) << 4;
}
PC_HOST_DEVICE inline int quant_iq4_nl(const block_iq4_nl& b, int j) { return iq4_level(nibble32(b.qs, j)); }
PC_HOST_DEVICE inline int quant_mxfp4(const block_mxfp4& b, int j) { return fp4_level(nibble32(b.qs, j)); }
PC_HOST_DEVICE inline int quant_q2_K(const block_q2_K& b, int i) {
  const int h = i / 128, k = (i % 128) / 32, l = i % 32;
  return (b.qs[32 * h + l] >> (2 * k)) & 3;
}
PC_HOST_DEVICE inline int quant_q3_K(const block_q3_K& b, int i) {
  const int h = i / 128, k = (i % 128) / 32, l = i % 32;
  const int low = (b.qs[32 * h + l] >> (2 * k)) & 3;
  return (b.hmask[l] >> (4 * h + k)) & 1 ? low : low - 4;
}
PC_HOST_DEVICE inline int quant_iq4_xs(const block_iq4_xs& b, int i) {
  return iq4_level(nibble32(b.qs + 16 * (i / 32), i % 32));
}
PC_HOST_DEVICE inline int quant_q4_K(const block_q4_K& b, int i) {
  const int sub = i / 32, l = i % 32;
  return (b.qs[32 * (sub / 2) + l] >> (4 * (sub % 2))) & 0x0f;
}
PC_HOST_DEVICE inline int quant_q5_K(const block_q5_K& b, int i) {
  const int sub = i / 32, l = i % 32;
  const int low = (b.qs[32 * (sub / 2) + l] >> (4 * (sub % 2))) & 0x0f;
  return low | ((b.qh[l] >> sub) & 1) << 4;
}
PC_HOST_DEVICE inline int quant_q6_K(const block_q6_K& b, int i) {
  const int h = i / 128, k = (i % 128) / 32, l = i % 32;
  const int low = (b.ql[64 * h + 32 * (k % 2) + l] >> (4 * (k / 2))) & 0x0f;
  const int high = (b.qh[32 * h + l] >> (2 * k)) & 3;
  return (low | high << 4) - 32;
}

// ---- dequantization of one element ---------------------------------------------------------
// The float steps follow ggml's dequantize_row_* (and the gguf package): scale products are
// formed first (d * scale, dmin * min), then one multiply by the quant and one add/subtract.
// Where an add follows (Q4_1, Q5_1, Q4_K, Q5_K), the product of an fp16 value (11 significant
// bits), a 6-bit scale and a quant of at most 5 bits has at most 22 significant bits, so it is
// exact in float and only the add rounds: a compiler fusing d * q + m into an fma (GCC's and
// nvcc's default) cannot change a bit, and the SIMD and CUDA paths may use fma freely.

PC_HOST_DEVICE inline float dequantize_element(const block_q4_0& b, int j) {
  return fp16_to_fp32(b.d) * static_cast<float>(quant_q4_0(b, j));
}
PC_HOST_DEVICE inline float dequantize_element(const block_q4_1& b, int j) {
  return fp16_to_fp32(b.d) * static_cast<float>(quant_q4_1(b, j)) + fp16_to_fp32(b.m);
}
PC_HOST_DEVICE inline float dequantize_element(const block_q5_0& b, int j) {
  return fp16_to_fp32(b.d) * static_cast<float>(quant_q5_0(b, j));
}
PC_HOST_DEVICE inline float dequantize_element(const block_q5_1& b, int j) {
  return fp16_to_fp32(b.d) * static_cast<float>(quant_q5_1(b, j)) + fp16_to_fp32(b.m);
}
PC_HOST_DEVICE inline float dequantize_element(const block_q8_0& b, int j) {
  return fp16_to_fp32(b.d) * static_cast<float>(b.qs[j]);
}
PC_HOST_DEVICE inline float dequantize_element(const block_q8_1& b, int j) {
  return fp16_to_fp32(b.d) * static_cast<float>(b.qs[j]);
}
PC_HOST_DEVICE inline float dequantize_element(const block_q4_K& b, int i) {
  uint8_t scale, min;
  get_scale_min_k4(i / 32, b.scales, &scale, &min);
  const float d = fp16_to_fp32(b.d) * static_cast<float>(scale);
  const float m = fp16_to_fp32(b.dmin) * static_cast<float>(min);
  return d * static_cast<float>(quant_q4_K(b, i)) - m;
}
PC_HOST_DEVICE inline float dequantize_element(const block_q5_K& b, int i) {
  uint8_t scale, min;
  get_scale_min_k4(i / 32, b.scales, &scale, &min);
  const float d = fp16_to_fp32(b.d) * static_cast<float>(scale);
  const float m = fp16_to_fp32(b.dmin) * static_cast<float>(min);
  return d * static_cast<float>(quant_q5_K(b, i)) - m;
}
PC_HOST_DEVICE inline float dequantize_element(const block_q6_K& b, int i) {
  const float d = fp16_to_fp32(b.d) * static_cast<float>(b.scales[i / 16]);
  return d * static_cast<float>(quant_q6_K(b, i));
}
PC_HOST_DEVICE inline float dequantize_element(const block_iq4_nl& b, int j) {
  return fp16_to_fp32(b.d) * static_cast<float>(quant_iq4_nl(b, j));
}
PC_HOST_DEVICE inline float dequantize_element(const block_mxfp4& b, int j) {
  return static_cast<float>(quant_mxfp4(b, j)) * e8m0_half(b.e);
}
PC_HOST_DEVICE inline float dequantize_element(const block_q2_K& b, int i) {
  const int sc = b.scales[i / 16];
  const float d = fp16_to_fp32(b.d) * static_cast<float>(sc & 0x0f);
  const float m = fp16_to_fp32(b.dmin) * static_cast<float>(sc >> 4);
  return d * static_cast<float>(quant_q2_K(b, i)) - m;
}
PC_HOST_DEVICE inline float dequantize_element(const block_q3_K& b, int i) {
  const float d = fp16_to_fp32(b.d) * static_cast<float>(get_scale_q3_K(b.scales, i / 16));
  return d * static_cast<float>(quant_q3_K(b, i));
}
// The scale product rounds here (11 + 6 bits times a level of 8 bits can exceed a float's 24):
// (d * scale) first, then the level, as ggml does.
PC_HOST_DEVICE inline float dequantize_element(const block_iq4_xs& b, int i) {
  const float d = fp16_to_fp32(b.d) * static_cast<float>(get_scale_iq4_xs(b, i / 32));
  return d * static_cast<float>(quant_iq4_xs(b, i));
}
PC_HOST_DEVICE inline float dequantize_element(const block_q8_K& b, int i) {
  return b.d * static_cast<float>(b.qs[i]);
}

// ---- dequantization of one block ---------------------------------------------------------

template <typename Block>
PC_HOST_DEVICE inline void dequantize_block(const Block& b, float* y) {
  for (int i = 0; i < Block::num_elements; ++i) y[i] = dequantize_element(b, i);
}

// ---- activation quantization ---------------------------------------------------------------
// Our choice, close to ggml's: a block's scale is d = amax / 127 and q = round_to_even(x / d),
// clamped to [-127, 127] (never -128, which the SIMD sign trick cannot negate). Q8_0/Q8_1 store
// d as fp16 and the quants are computed with that stored value, so |x - d q| <= d / 2 holds
// for the d the dot product uses.

PC_HOST_DEVICE inline float inverse_or_zero(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

PC_HOST_DEVICE inline int8_t quantize_q8_value(float x, float inverse_scale) {
  float r = rintf(x * inverse_scale);  // the default rounding mode: to nearest, ties to even
  if (r != r) return 0;                // NaN: casting it to int8_t would be undefined
  r = r > 127.0f ? 127.0f : r;
  r = r < -127.0f ? -127.0f : r;
  return static_cast<int8_t>(r);
}

}  // namespace pagedchat
