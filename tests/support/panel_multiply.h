#pragma once
// A packed matrix multiplied panel by panel, as the panel tests (tests/engine/quant) run it:
// the scalar reference, or one SIMD kernel with compact or expanded activations, a few tokens a
// call, so that a kernel's result can be compared with the reference's bit for bit.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "engine/quant/panel/panel.h"

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

// Runs each of `runs` over the matrix with the tokens handed over all at once, one, a few or
// many a call (the kernels take 8, 4, 2 or 1 per pass), and names the first run and call size
// whose result differs from `expected` in any bit; empty when every one gives its bits.
inline std::string first_mismatch(const std::vector<PanelRun>& runs, GgmlType type, const std::vector<uint8_t>& packed,
                                  int64_t rows, int64_t cols, const uint8_t* act, size_t act_row_bytes,
                                  int64_t num_tokens, const std::vector<float>& expected) {
  for (const PanelRun& run : runs) {
    for (int64_t per_call : {num_tokens, int64_t{1}, int64_t{2}, int64_t{3}, int64_t{5}, int64_t{8}, int64_t{15}}) {
      if (!same_bits(multiply_panels(run, type, packed, rows, cols, act, act_row_bytes, num_tokens, per_call), expected))
        return std::string(panel_kernel_name(run.kernel)) + (run.expanded ? " expanded, " : " compact, ") +
               std::to_string(per_call) + " tokens per call";
    }
  }
  return {};
}

// The SIMD kernels this machine runs, with compact activations (and expanded ones too when asked).
inline std::vector<PanelRun> simd_runs(bool with_expanded) {
  std::vector<PanelRun> runs;
  for (PanelKernel k : available_panel_kernels()) {
    runs.push_back({false, k, false});
    if (with_expanded) runs.push_back({false, k, true});
  }
  return runs;
}

}  // namespace pagedchat::test
