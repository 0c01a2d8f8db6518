#pragma once
// Internal to engine/quant: the byte layout of a panel (see panel.h), shared by the packing
// code, the scalar reference and the AVX2 kernel.

#include <cstddef>
#include <cstdint>

#include "engine/quant/quant_blocks.h"

namespace pagedchat {

// One 32-element block of 16 Q4_1 rows. q[g][j] serves rows 8 g .. 8 g + 7: its bytes
// 4 r + 2 h + e (r < 8, h, e < 2) belong to row 8 g + r, half h of the block (elements
// 16 h .. 16 h + 15); the low nibble is element 16 h + 4 j + e, the high nibble element
// 16 h + 4 j + 2 + e. So the low nibbles of q[g][j] hold, per row, a pair of each half side
// by side, ready for an unsigned x signed byte-pair multiply against the activation quad
// (pair 4j of half 0, pair 4j of half 1) repeated 8 times; the two halves' 16-bit lanes of a
// row are then summed by one 16-bit pair add (vpmaddwd), straight into the row's 32-bit lane.
struct panel_q4_1 {
  uint16_t d[16];  // fp16 scale of each row's block
  uint16_t m[16];  // fp16 minimum of each row's block
  uint8_t q[2][4][32];
};
static_assert(sizeof(panel_q4_1) == 16 * sizeof(block_q4_1), "a panel is as big as its rows");

// One 32-element block of 16 Q8_0 rows. q[g][c] holds rows 8 g .. 8 g + 7, four elements
// each: byte 4 r + e is element 4 c + e of row 8 g + r. A byte-pair multiply and a 16-bit
// pair sum then leave each row's 4-element dot product in its own 32-bit lane (8-bit
// products are too big to sum further in 16 bits).
struct panel_q8_0 {
  uint16_t d[16];
  int8_t q[2][8][32];
};
static_assert(sizeof(panel_q8_0) == 16 * sizeof(block_q8_0), "a panel is as big as its rows");

// Element k (0..31) of row r in a panel block, as the integer quant.
inline int panel_quant(const panel_q4_1& p, int r, int k) {
  const int h = k / 16, j = (k % 16) / 4, high = (k / 2) % 2, e = k % 2;
  const uint8_t byte = p.q[r / 8][j][4 * (r % 8) + 2 * h + e];
  return high ? byte >> 4 : byte & 0x0f;
}
inline int panel_quant(const panel_q8_0& p, int r, int k) { return p.q[r / 8][k / 4][4 * (r % 8) + k % 4]; }

// An expanded Q4_1 activation row (panel.h): per block, 8 vectors of 32 bytes (v = 2 j + n:
// the quad of elements 4 j + 2 n, +1, 16 + 4 j + 2 n, +1 repeated 8 times, for the low (n = 0)
// or high (n = 1) nibbles of q[g][j]); after the last block, each block's d and s as floats.
inline constexpr size_t kExpandedQ4_1Block = 8 * 32;
inline size_t expanded_q4_1_scales_at(int64_t num_blocks) { return static_cast<size_t>(num_blocks) * kExpandedQ4_1Block; }

}  // namespace pagedchat
