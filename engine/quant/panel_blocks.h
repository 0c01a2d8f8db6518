#pragma once
// Internal to engine/quant: the byte layout of a panel (see panel.h), shared by the packing
// code, the scalar reference and the AVX2 kernel.

#include <cstddef>
#include <cstdint>

#include "engine/common/ggml_type.h"
#include "engine/quant/quant_blocks.h"

namespace pagedchat {

// One 32-element block of 16 Q4_1 rows. q[c] holds word c (bytes 4 c .. 4 c + 3) of every
// row's 16 quant bytes side by side: byte 4 r + b is byte 4 c + b of row r, so its low nibble is
// element 4 c + b and its high nibble element 16 + 4 c + b (the row format's own nibble order).
// A row's 32-bit lane of q[c] thus meets, nibble half by nibble half, two runs of 4 activation
// quants that lie side by side in the activation block (4 c .. 4 c + 3 and 16 + 4 c .. 16 + 4 c
// + 3): one 4-way byte dot (vpdpbusd) or a byte-pair multiply and a 16-bit pair add (vpmaddubsw,
// vpmaddwd) leaves each row's sum in its own lane. q[c] is one 64-byte vector of 16 rows, or two
// 32-byte vectors of 8.
struct panel_q4_1 {
  uint16_t d[16];  // fp16 scale of each row's block
  uint16_t m[16];  // fp16 minimum of each row's block
  uint8_t q[4][64];
};
static_assert(sizeof(panel_q4_1) == 16 * sizeof(block_q4_1), "a panel is as big as its rows");

// One 32-element block of 16 Q8_0 rows. q[c] holds elements 4 c .. 4 c + 3 of every row: byte
// 4 r + e is element 4 c + e of row r. A 4-way byte dot then leaves each row's 4-element dot
// product in its own 32-bit lane.
struct panel_q8_0 {
  uint16_t d[16];
  int8_t q[8][64];
};
static_assert(sizeof(panel_q8_0) == 16 * sizeof(block_q8_0), "a panel is as big as its rows");

// Element k (0..31) of row r in a panel block, as the integer quant.
inline int panel_quant(const panel_q4_1& p, int r, int k) {
  const uint8_t byte = p.q[(k % 16) / 4][4 * r + k % 4];
  return k < 16 ? byte & 0x0f : byte >> 4;
}
inline int panel_quant(const panel_q8_0& p, int r, int k) { return p.q[k / 4][4 * r + k % 4]; }

// An AVX2-expanded activation row (panel.h): per block, 8 vectors of 32 bytes, vector v the
// quad of quants 4 v .. 4 v + 3 repeated 8 times (for q[c]: v = c meets the low nibbles,
// v = 4 + c the high ones); for Q4_1, after the last block, each block's d and s as floats.
inline constexpr size_t kExpandedQ4_1Block = 8 * 32;
inline size_t expanded_q4_1_scales_at(int64_t num_blocks) { return static_cast<size_t>(num_blocks) * kExpandedQ4_1Block; }

// An AVX-512-expanded activation row (panel.h): one of these per block.
struct vnni_q8_1_scales {  // for Q4_1 weights
  float d;  // the activation block's scale
  float s;  // d times the sum of its quants
};
struct vnni_q8_0_scales {  // for Q8_0 weights
  float d;
  int32_t offset;  // -128 times the sum of its quants
};
// Writes those of an activation row of num_blocks blocks (Q8_1 for Q4_1 weights, Q8_0 for Q8_0).
void expand_vnni_scales(GgmlType weight_type, const void* act_row, int64_t num_blocks, void* dst);

}  // namespace pagedchat
