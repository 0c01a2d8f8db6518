#pragma once
// The per-element math of the CUDA backend's fused layer kernels (layer_kernels.cu), written
// once, PC_HOST_DEVICE, in the same order of operations as CpuBackend (vector_ops.cpp,
// rope.cpp), so the CPU tests check it against the CPU forward pass exactly. C++17, no CUDA
// headers: .cu files include it. Not here: reductions (a kernel sums in its own order).

#include <cmath>
#include <cstdint>

#include "engine/common/exp_approx.h"
#include "engine/common/float16.h"  // PC_HOST_DEVICE

namespace pagedchat::kernels {

// SwiGLU: silu(gate) * up, as cpu::swiglu.
PC_HOST_DEVICE inline float silu_mul(float gate, float up) { return silu_mul_approx(gate, up); }

// RMSNorm's scale from the row's sum of squares, as cpu::rms_norm: out = x * scale * weight.
PC_HOST_DEVICE inline float rms_scale(float sum_sq, int32_t n, float eps) {
  return 1.0f / sqrtf(sum_sq / static_cast<float>(n) + eps);
}

// Rotary angle of pair i at a position, in double so that the CPU (RopeAngles) and the GPU
// round to the same float: cos and sin of position * inv_freq[i].
PC_HOST_DEVICE inline void rope_cos_sin(int32_t position, float inv_freq, float* c, float* s) {
  const double angle = static_cast<double>(position) * static_cast<double>(inv_freq);
  *c = static_cast<float>(cos(angle));
  *s = static_cast<float>(sin(angle));
}

// Rotary pairing inside one head of rot_dim rotating dims (half = rot_dim / 2): adjacent pairs
// (2i, 2i+1), the GGUF llama layout, or NEOX pairs (i, i + half). For dim d < rot_dim: its
// pair index i, its partner dim, and whether it is the pair's first element.
struct RopeSlot {
  int32_t pair;
  int32_t partner;
  bool first;
};
PC_HOST_DEVICE inline RopeSlot rope_slot(bool neox, int32_t d, int32_t half) {
  if (neox) return d < half ? RopeSlot{d, d + half, true} : RopeSlot{d - half, d - half, false};
  return RopeSlot{d / 2, d ^ 1, (d & 1) == 0};
}

// Element d of a rotated pair, from its own value and its partner's: the first element becomes
// x0 c - x1 s, the second x0 s + x1 c, as cpu::apply_rope.
PC_HOST_DEVICE inline float rope_rotate(bool first, float self, float partner, float c, float s) {
  return first ? self * c - partner * s : partner * s + self * c;
}

}  // namespace pagedchat::kernels
