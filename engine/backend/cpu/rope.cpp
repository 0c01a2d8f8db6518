// Rotary embedding: angles per position, and the rotation in either pairing layout.
#include "engine/backend/cpu/rope.h"

#include <cmath>

namespace pagedchat::cpu {

void RopeAngles::compute(int32_t position, const std::vector<float>& inv_freq, double scale) {
  size_t half = inv_freq.size();
  cos.resize(half);
  sin.resize(half);
  for (size_t i = 0; i < half; ++i) {
    double angle = static_cast<double>(position) * static_cast<double>(inv_freq[i]);
    cos[i] = static_cast<float>(std::cos(angle) * scale);
    sin[i] = static_cast<float>(std::sin(angle) * scale);
  }
}

void apply_rope(float* x, int num_heads, int head_dim, int rope_dim, RopeLayout layout, const RopeAngles& a) {
  const int half = rope_dim / 2;
  for (int h = 0; h < num_heads; ++h) {
    float* v = x + static_cast<size_t>(h) * head_dim;
    for (int i = 0; i < half; ++i) {
      // Adjacent pairs (2i, 2i+1) or NEOX pairs (i, i + half).
      int i0 = layout == RopeLayout::kAdjacentPairs ? 2 * i : i;
      int i1 = layout == RopeLayout::kAdjacentPairs ? 2 * i + 1 : i + half;
      float x0 = v[i0], x1 = v[i1];
      v[i0] = x0 * a.cos[i] - x1 * a.sin[i];
      v[i1] = x0 * a.sin[i] + x1 * a.cos[i];
    }
  }
}

}  // namespace pagedchat::cpu
