#pragma once
// Internal to engine/quant: the byte layout of a panel (see panel.h), shared by the packing
// code, the scalar reference and the AVX2 kernel.

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "engine/common/float16.h"
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

// 32 columns of 16 F16 or BF16 rows: w[k][r] is column k of row r, so that one load of 32 bytes
// (a 512-bit vector once widened to floats) holds a column of the panel. As big as its rows.
struct panel_f16 {
  uint16_t w[32][16];
};
static_assert(sizeof(panel_f16) == 16 * 32 * sizeof(uint16_t) && sizeof(panel_f16) % 64 == 0, "whole lines");

// One 32-element block of 16 Q4_0, Q5_0 or Q5_1 rows: q[c] as panel_q4_1's. The 5-bit types add
// qh, whose byte 4 r + b holds bit 4 of element 4 c + b of row r at bit c and bit 4 of element
// 16 + 4 c + b at bit 4 + c (c = 0..3), so that word c's two nibble vectors take their fifth
// bits from one vector by a shift. Each is as big as its 16 rows. The quants are kept unsigned;
// the format's -8 or -16 is applied through the activation block's sum (panel_legacy.h).
struct panel_q4_0 {
  uint16_t d[16];
  uint8_t q[4][64];
};
struct panel_q5_0 {
  uint16_t d[16];
  uint8_t qh[64];
  uint8_t q[4][64];
};
struct panel_q5_1 {
  uint16_t d[16];
  uint16_t m[16];
  uint8_t qh[64];
  uint8_t q[4][64];
};
// IQ4_NL and MXFP4: q[c] as panel_q4_0's, each nibble an index into the format's 16 levels
// (iq4_level, fp4_level); IQ4_NL keeps its f16 scales, MXFP4 its scale bytes (E8M0, e8m0_half).
// Each is as big as its 16 rows.
struct panel_iq4_nl {
  uint16_t d[16];
  uint8_t q[4][64];
};
struct panel_mxfp4 {
  uint8_t e[16];
  uint8_t q[4][64];
};
static_assert(sizeof(panel_q4_0) == 16 * sizeof(block_q4_0), "a panel is as big as its rows");
static_assert(sizeof(panel_iq4_nl) == 16 * sizeof(block_iq4_nl), "a panel is as big as its rows");
static_assert(sizeof(panel_mxfp4) == 16 * sizeof(block_mxfp4), "a panel is as big as its rows");
static_assert(sizeof(panel_q5_0) == 16 * sizeof(block_q5_0), "a panel is as big as its rows");
static_assert(sizeof(panel_q5_1) == 16 * sizeof(block_q5_1), "a panel is as big as its rows");

// One 256-element super-block of 16 Q4_K rows, its scales unpacked at load into what the
// kernels multiply with. q[c][w] holds word w (bytes 32 c + 4 w .. + 3) of every row's quants
// side by side, as panel_q4_1 does: byte 4 r + b is qs[32 c + 4 w + b] of row r, whose low
// nibble is element 4 w + b of sub-block 2 c and whose high nibble the same of sub-block 2 c + 1.
// scales[s][r] is row r's 6-bit scale of sub-block s; mins[c][2 r + h] its 6-bit min of
// sub-block 2 c + h, in pairs so that one 16-bit pair multiply (vpmaddwd, vpdpwssd) against the
// activation's two sub-block sums gives a row's two min terms in its lane. 64 bytes more than
// the 16 rows (2.8%): the 12 packed scale bytes of a row become 16.
struct panel_q4_K {
  uint16_t d[16];
  uint16_t dmin[16];
  uint8_t scales[8][16];
  uint8_t mins[4][32];
  uint8_t q[4][8][64];
};
static_assert(sizeof(panel_q4_K) == 16 * sizeof(block_q4_K) + 64, "the 6-bit scales as bytes");

// One 256-element super-block of 16 Q5_K rows: a Q4_K panel block and the fifth bits. qh[w]
// holds, as q[c][w] does, bytes 4 w .. 4 w + 3 of every row's qh: bit s of byte 4 r + b is bit 4
// of element 4 w + b of sub-block s of row r. 64 bytes more than the 16 rows, as Q4_K.
struct panel_q5_K {
  uint16_t d[16];
  uint16_t dmin[16];
  uint8_t scales[8][16];
  uint8_t mins[4][32];
  uint8_t qh[8][64];
  uint8_t q[4][8][64];
};
static_assert(sizeof(panel_q5_K) == 16 * sizeof(block_q5_K) + 64, "the 6-bit scales as bytes");

// One 256-element super-block of 16 Q6_K rows. Group g (elements 16 g .. 16 g + 15, one scale)
// is 4 quads k (elements 16 g + 4 k .. + 3); byte 4 r + b of ql[g][0] holds the low 4 bits of
// quad 0's element b of row r in its low nibble and quad 2's in its high nibble, ql[g][1] quads
// 1 and 3, and qh[g] the top 2 bits of quad k's element b at bits 2 k, 2 k + 1. The quants are
// kept unsigned (0..63); the -32 of the format is applied through the activation sums.
struct panel_q6_K {
  uint16_t d[16];
  uint8_t pad[32];        // so that the quants start on a 64-byte line (below)
  int8_t scales[16][16];  // [group][row]
  uint8_t ql[16][2][64];
  uint8_t qh[16][64];
};
// 32 bytes more than the 16 rows (1%), so that the block is whole 64-byte lines like every other
// panel block: in an aligned buffer no vector load then spans two lines (a third fewer bytes a
// second from memory when every other block's loads were split).
static_assert(sizeof(panel_q6_K) == 16 * sizeof(block_q6_K) + 32 && sizeof(panel_q6_K) % 64 == 0,
              "whole lines");

// The low-bit K-quants (panel_low_bits.h). Each keeps the row format's bits and the same quad
// order: quad j of a super-block is elements 4 j .. 4 j + 3, and wherever a panel holds a quad,
// byte 4 r + e is element 4 j + e of row r, so that a 4-way byte dot leaves each row's sum in
// its own lane. The kernels unpack quads in registers into unsigned bytes.
//
// Q2_K: group g (16 elements, one scale and one min) is quads 4 g .. 4 g + 3; bits 2 k, 2 k + 1
// of byte 4 r + e of q[g] are quad k's element e, and scales[g][r] is row r's byte of the row
// format (scale in the low nibble, min in the high one). As big as its 16 rows.
struct panel_q2_K {
  uint16_t d[16];
  uint16_t dmin[16];
  uint8_t scales[16][16];  // [group][row]
  uint8_t q[16][64];
};
static_assert(sizeof(panel_q2_K) == 16 * sizeof(block_q2_K) && sizeof(panel_q2_K) % 64 == 0, "whole lines");

// Q3_K: the low 2 bits as Q2_K's, and the third bit (the row format's hmask bit: set means +4
// against the format's -4) of group g's quad k at bit 4 (g % 2) + k of qh[g / 2]; the quant is
// kept unsigned (0..7), the format's -4 applied through the activation sums. scales[g][r] is
// row r's 6-bit scale minus 32. 96 bytes more than the 16 rows (5%): the 12 packed scale bytes
// of a row become 16, and the block is whole 64-byte lines.
struct panel_q3_K {
  uint16_t d[16];
  uint8_t pad[32];
  int8_t scales[16][16];
  uint8_t q[16][64];
  uint8_t qh[8][64];
};
static_assert(sizeof(panel_q3_K) == 16 * sizeof(block_q3_K) + 96 && sizeof(panel_q3_K) % 64 == 0, "whole lines");

// IQ4_XS: sub-block s (32 elements, one scale) is quads 8 s .. 8 s + 7; q[s][w] holds word w of
// every row's 16 bytes of the sub-block as panel_q4_1 does: byte 4 r + e's low nibble is quad
// w's element e, its high nibble quad 4 + w's. A nibble is an index into the 16 levels
// (iq4_level). scales[s][r] is row r's 6-bit scale minus 32. 64 bytes more than the 16 rows (3%).
struct panel_iq4_xs {
  uint16_t d[16];
  uint8_t pad[32];
  int8_t scales[8][16];
  uint8_t q[8][4][64];
};
static_assert(sizeof(panel_iq4_xs) == 16 * sizeof(block_iq4_xs) + 64 && sizeof(panel_iq4_xs) % 64 == 0,
              "whole lines");

// A K-quant panel's quants unpacked into bytes, what a prefill chunk's kernels read instead of
// unpacking them again in every pass of tokens (panel_k_avx2.cpp, panel_k_avx512.cpp): quad j
// (elements 4 j .. 4 j + 3) of a super-block's 16 rows, byte 4 r + e element 4 j + e of row r,
// unsigned (Q6_K: before its -32); kUnpackedQuadsPerBlock of them a super-block, 16 bytes a
// column in all.
struct alignas(64) UnpackedQuads {
  uint8_t q[64];
};
inline constexpr int kUnpackedQuadsPerBlock = 256 / 4;

// Element k (0..31) of row r in a panel block, as the integer quant.
inline int panel_quant(const panel_q4_1& p, int r, int k) {
  const uint8_t byte = p.q[(k % 16) / 4][4 * r + k % 4];
  return k < 16 ? byte & 0x0f : byte >> 4;
}
inline int panel_quant(const panel_q8_0& p, int r, int k) { return p.q[k / 4][4 * r + k % 4]; }
// Element k (0..31) of row r in a Q4_0/Q5_0/Q5_1 panel block, as the unsigned quant.
template <typename Panel>
inline int legacy_panel_quant(const Panel& p, int r, int k) {
  const int c = (k % 16) / 4, b = k % 4;
  const uint8_t byte = p.q[c][4 * r + b];
  int q = k < 16 ? byte & 0x0f : byte >> 4;
  if constexpr (requires { p.qh; }) q |= ((p.qh[4 * r + b] >> (k < 16 ? c : 4 + c)) & 1) << 4;
  return q;
}

// Element k (0..31) of row r in an IQ4_NL or MXFP4 panel block, as the signed level.
inline int panel_level(const panel_iq4_nl& p, int r, int k) { return iq4_level(legacy_panel_quant(p, r, k)); }
inline int panel_level(const panel_mxfp4& p, int r, int k) { return fp4_level(legacy_panel_quant(p, r, k)); }
// A panel block's weight scale of row r as a float.
inline float panel_scale(const panel_iq4_nl& p, int r) { return fp16_to_fp32(p.d[r]); }
inline float panel_scale(const panel_mxfp4& p, int r) { return e8m0_half(p.e[r]); }

// Element k (0..255) of row r in a K-quant panel block, as the unsigned quant (Q6_K: before
// the format's -32).
inline int panel_quant(const panel_q4_K& p, int r, int k) {
  const int sub = k / 32, l = k % 32;
  const uint8_t byte = p.q[sub / 2][l / 4][4 * r + l % 4];
  return sub % 2 == 0 ? byte & 0x0f : byte >> 4;
}
inline int panel_quant(const panel_q5_K& p, int r, int k) {
  const int sub = k / 32, l = k % 32;
  const uint8_t byte = p.q[sub / 2][l / 4][4 * r + l % 4];
  const int low = sub % 2 == 0 ? byte & 0x0f : byte >> 4;
  return low | ((p.qh[l / 4][4 * r + l % 4] >> sub) & 1) << 4;
}
inline int panel_quant(const panel_q6_K& p, int r, int k) {
  const int g = k / 16, quad = (k % 16) / 4, b = k % 4;
  const uint8_t low = p.ql[g][quad % 2][4 * r + b];
  const int low4 = quad < 2 ? low & 0x0f : low >> 4;
  return low4 | ((p.qh[g][4 * r + b] >> (2 * quad)) & 3) << 4;
}

// Calls f(std::type_identity<P>{}) with P the panel block of a low-bit K-quant (Q2_K, Q3_K,
// anything else taken as IQ4_XS): where their packing and kernels turn a type into a layout.
template <typename F>
decltype(auto) with_low_bits_panel(GgmlType type, F&& f) {
  if (type == GgmlType::Q2_K) return f(std::type_identity<panel_q2_K>{});
  if (type == GgmlType::Q3_K) return f(std::type_identity<panel_q3_K>{});
  return f(std::type_identity<panel_iq4_xs>{});
}

// Element k (0..255) of row r in a low-bit panel block: Q2_K's quant (0..3), Q3_K's unsigned
// quant (0..7, before the format's -4), IQ4_XS's level index (0..15).
inline int panel_quant(const panel_q2_K& p, int r, int k) {
  return (p.q[k / 16][4 * r + k % 4] >> (2 * ((k % 16) / 4))) & 3;
}
inline int panel_quant(const panel_q3_K& p, int r, int k) {
  const int g = k / 16, quad = (k % 16) / 4, e = k % 4;
  const int low = (p.q[g][4 * r + e] >> (2 * quad)) & 3;
  return low | ((p.qh[g / 2][4 * r + e] >> (4 * (g % 2) + quad)) & 1) << 2;
}
inline int panel_quant(const panel_iq4_xs& p, int r, int k) {
  const int s = k / 32, quad = (k % 32) / 4, e = k % 4;
  const uint8_t byte = p.q[s][quad % 4][4 * r + e];
  return quad < 4 ? byte & 0x0f : byte >> 4;
}

// An AVX2-expanded activation row (panel.h): per block, 8 vectors of 32 bytes, vector v the
// quad of quants 4 v .. 4 v + 3 repeated 8 times (for q[c]: v = c meets the low nibbles,
// v = 4 + c the high ones); for Q4_1, after the last block, each block's d and s as floats.
inline constexpr size_t kExpandedQ4_1Block = 8 * 32;
inline size_t expanded_q4_1_scales_at(int64_t num_blocks) { return static_cast<size_t>(num_blocks) * kExpandedQ4_1Block; }

// An AVX-512-expanded activation row (panel.h), and the expanded row of both SIMD kernels of
// Q4_0, Q5_0 and Q5_1 (panel_legacy.h): one of these per block.
struct vnni_q8_1_scales {  // for Q4_1 and Q5_1 weights
  float d;  // the activation block's scale
  float s;  // d times the sum of its quants
};
struct vnni_q8_0_scales {  // for Q8_0, Q4_0 and Q5_0 weights
  float d;
  int32_t offset;  // -128 (Q8_0), -8 (Q4_0) or -16 (Q5_0) times the sum of its quants
};
// Writes those of an activation row of num_blocks blocks (Q8_1 for Q4_1/Q5_1 weights, Q8_0 for the others).
void expand_vnni_scales(GgmlType weight_type, const void* act_row, int64_t num_blocks, void* dst);

// The AVX-512-expanded Q8_K row for Q4_K and Q5_K weights: per super-block, the sums of its 8
// sub-blocks of 32 quants as 16-bit pairs, word c = (sum of sub-block 2 c, sum of 2 c + 1), what
// the min term's pair dots (vpdpwssd) take against panel_q4_K::mins[c] straight from memory. A
// panel's kernel would otherwise add and pack these from the row's 16 sums in scalar code for
// every token and super-block, again in every panel (a tenth of the kernel's time). |sum| <=
// 32 x 128 fits 16 bits.
struct vnni_q8_K_min_sums {
  uint32_t pairs[4];
};
// Writes those of a Q8_K row of num_super_blocks super-blocks.
void expand_k_min_sums(const void* act_row, int64_t num_super_blocks, void* dst);

// The 32-element panels of panel_legacy.h: each one's panel block, row block, activation block and
// expanded scales, what their packing, reference and kernels are instantiated with.
template <typename Panel, typename Row, typename Act, typename Scales>
struct LegacyLayout {
  using panel = Panel;
  using row = Row;
  using act = Act;
  using scales = Scales;
};
// Calls f(LegacyLayout<...>{}) for Q4_0, Q5_0, IQ4_NL, MXFP4, or Q5_1 (anything else).
template <typename F>
decltype(auto) with_legacy_panel(GgmlType type, F&& f) {
  if (type == GgmlType::Q4_0) return f(LegacyLayout<panel_q4_0, block_q4_0, block_q8_0, vnni_q8_0_scales>{});
  if (type == GgmlType::Q5_0) return f(LegacyLayout<panel_q5_0, block_q5_0, block_q8_0, vnni_q8_0_scales>{});
  if (type == GgmlType::IQ4_NL) return f(LegacyLayout<panel_iq4_nl, block_iq4_nl, block_q8_0, vnni_q8_0_scales>{});
  if (type == GgmlType::MXFP4) return f(LegacyLayout<panel_mxfp4, block_mxfp4, block_q8_0, vnni_q8_0_scales>{});
  return f(LegacyLayout<panel_q5_1, block_q5_1, block_q8_1, vnni_q8_1_scales>{});
}
// IQ4_NL and MXFP4: nibbles that index a table of levels; their level q as a signed byte.
template <typename Panel>
inline constexpr bool kLevelPanel = std::is_same_v<Panel, panel_iq4_nl> || std::is_same_v<Panel, panel_mxfp4>;
template <typename Panel>
inline int level_at_index(int q) {
  return std::is_same_v<Panel, panel_mxfp4> ? fp4_level(q) : iq4_level(q);
}

}  // namespace pagedchat
