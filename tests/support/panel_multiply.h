#pragma once
// A packed matrix multiplied panel by panel, as the panel tests (tests/engine/quant) run it:
// the scalar reference, or one SIMD kernel with compact or expanded activations, a few tokens a
// call, so that a kernel's result can be compared with the reference's bit for bit.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/quant/panel.h"

namespace pagedchat::test {

struct PanelRun {
  bool reference = false;                   // the scalar definition, not `kernel`
  PanelKernel kernel = PanelKernel::kScalar;
  bool expanded = false;                    // activations expanded for `kernel` first
};

// out[t * rows + r] for the whole matrix; act holds num_tokens rows of act_row_bytes prepared
// for `type` (f32 for the float types), handed over tokens_per_call rows at a time.
inline std::vector<float> multiply_panels(PanelRun run, GgmlType type, const std::vector<uint8_t>& packed,
                                          int64_t rows, int64_t cols, const uint8_t* act, size_t act_row_bytes,
                                          int64_t num_tokens, int64_t tokens_per_call) {
  const size_t expanded_bytes = run.expanded ? panel_expanded_row_bytes(type, cols, run.kernel) : 0;
  std::vector<uint8_t> expanded(expanded_bytes * static_cast<size_t>(num_tokens));
  if (run.expanded) {
    for (int64_t t = 0; t < num_tokens; ++t)
      expand_for_panels(type, act + act_row_bytes * t, cols, expanded.data() + expanded_bytes * t, run.kernel);
  }
  std::vector<float> out(static_cast<size_t>(rows * num_tokens), NAN);
  for (int64_t p = 0; p * kPanelRows < rows; ++p) {
    const int64_t n = std::min(kPanelRows, rows - p * kPanelRows);
    for (int64_t t0 = 0; t0 < num_tokens; t0 += tokens_per_call) {
      const int64_t nt = std::min(tokens_per_call, num_tokens - t0);
      const uint8_t* a = act + act_row_bytes * t0;
      float* o = out.data() + t0 * rows + p * kPanelRows;
      if (run.reference) {
        reference::panel_dot(type, cols, packed.data(), p, n, a, act_row_bytes, nt, o, rows);
      } else {
        const uint8_t* e = run.expanded ? expanded.data() + expanded_bytes * t0 : nullptr;
        panel_dot(type, cols, packed.data(), p, n, a, act_row_bytes, nt, o, rows, e, run.kernel);
      }
    }
  }
  return out;
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace pagedchat::test
