#pragma once
// Internal to engine/quant: the byte layout of a panel (see panel.h), shared by the packing
// code, the scalar reference and the AVX2 kernel.

#include <cstdint>

#include "engine/quant/quant_blocks.h"

namespace pagedchat {

// One 32-element block of 16 Q4_1 rows. Byte b of q[j] belongs to row b / 2; with e = b % 2
// its low nibble is element 4 j + e and its high nibble element 4 j + 2 + e. So the low
// nibbles of q[j] are the element pairs (4j, 4j+1) of all 16 rows side by side, ready for an
// unsigned x signed byte-pair multiply against the activation pair (4j, 4j+1) repeated 16
// times; the high nibbles likewise for (4j+2, 4j+3).
struct panel_q4_1 {
  uint16_t d[16];  // fp16 scale of each row's block
  uint16_t m[16];  // fp16 minimum of each row's block
  uint8_t q[8][32];
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
  const int j = k / 4, e = k % 2, high = (k / 2) % 2;
  const uint8_t byte = p.q[j][2 * r + e];
  return high ? byte >> 4 : byte & 0x0f;
}
inline int panel_quant(const panel_q8_0& p, int r, int k) { return p.q[r / 8][k / 4][4 * (r % 8) + k % 4]; }

}  // namespace pagedchat
