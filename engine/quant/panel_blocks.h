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

// Element k (0..31) of row r in a panel block, as the 4-bit quant.
inline int panel_quant(const panel_q4_1& p, int r, int k) {
  const int j = k / 4, e = k % 2, high = (k / 2) % 2;
  const uint8_t byte = p.q[j][2 * r + e];
  return high ? byte >> 4 : byte & 0x0f;
}

}  // namespace pagedchat
