// f32 vector kernels (RMSNorm, SwiGLU, add) with a fixed order of operations.
#include "engine/backend/cpu/vector_ops.h"

#include <cmath>

namespace pagedchat::cpu {

void rms_norm(const float* x, const float* weight, float* out, int64_t n, float eps) {
  float ss = dot_f32(x, x, n);
  float scale = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * scale * weight[i];
}

void swiglu(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void add_inplace(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

}  // namespace pagedchat::cpu
