#pragma once
// Internal to engine/quant: the loop that every panel layout packs with, and the one every
// K-quant panel's scalar reference runs. Panel p, block i holds block i of rows 16 p .. 16 p + 15;
// a partial last panel's missing rows are zeros. `put(panel block, lane, row block)` writes one
// row block into its lane (panel_blocks.h says where).

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "engine/quant/quant_blocks.h"

namespace pagedchat {

// Row: a row block type with num_elements; cols a multiple of it (the caller checked).
template <typename Panel, typename Row, typename Put>
void pack_panel_rows(const void* w, size_t row_stride, int64_t rows, int64_t cols, void* dst, Put put) {
  constexpr int64_t kRows = 16;
  const int64_t nb = cols / Row::num_elements;
  const int64_t panels = (rows + kRows - 1) / kRows;
  auto* out = static_cast<Panel*>(dst);
  for (int64_t p = 0; p < panels; ++p) {
    for (int64_t i = 0; i < nb; ++i) {
      Panel& pb = out[p * nb + i];
      std::memset(&pb, 0, sizeof pb);
      for (int r = 0; r < kRows && p * kRows + r < rows; ++r) {
        Row b;
        std::memcpy(&b, static_cast<const uint8_t*>(w) + (p * kRows + r) * row_stride + i * sizeof b, sizeof b);
        put(pb, r, b);
      }
    }
  }
}

// The K-quant panels' reference over a call: out[t * out_stride + r] = row_dot(blocks, nb, r, y)
// for each token's Q8_K row y and each of the panel's first num_rows rows.
template <typename Panel, typename RowDot>
void reference_k_rows(int64_t cols, const void* packed, int64_t panel, int64_t num_rows, const void* act,
                      size_t act_row_bytes, int64_t num_tokens, float* out, int64_t out_stride, RowDot row_dot) {
  const int64_t nb = cols / kQKK;
  const auto* blocks = static_cast<const Panel*>(packed) + panel * nb;
  for (int64_t t = 0; t < num_tokens; ++t) {
    const auto* y = reinterpret_cast<const block_q8_K*>(static_cast<const uint8_t*>(act) + t * act_row_bytes);
    for (int64_t r = 0; r < num_rows; ++r) out[t * out_stride + r] = row_dot(blocks, nb, static_cast<int>(r), y);
  }
}

}  // namespace pagedchat
