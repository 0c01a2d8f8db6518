#pragma once
// Rotary position embedding applied in place to the heads of one token.

#include <cstdint>
#include <vector>

#include "engine/model/model_config.h"

namespace pagedchat::cpu {

// cos/sin of position * inv_freq[i] for i < rope_dim / 2, times `scale` (LongRoPE's attention
// factor); computed in double so every backend and the reference agree to the last float bit
// on the angles.
struct RopeAngles {
  std::vector<float> cos, sin;  // [rope_dim / 2]
  void compute(int32_t position, const std::vector<float>& inv_freq, double scale = 1.0);
};

// x: [num_heads, head_dim]; rotates the first rope_dim dims of each head.
void apply_rope(float* x, int num_heads, int head_dim, int rope_dim, RopeLayout layout, const RopeAngles& a);

}  // namespace pagedchat::cpu
