#pragma once
// Small f32 vector kernels of the CPU forward pass (AVX2+FMA where compiled in, scalar
// otherwise). Each gives the same bits for the same inputs whatever the batch around it.

#include <cstdint>

namespace pagedchat::cpu {

float dot_f32(const float* a, const float* b, int64_t n);
// y += a * x
void axpy_f32(float a, const float* x, float* y, int64_t n);
// out = x / rms(x) * weight
void rms_norm(const float* x, const float* weight, float* out, int64_t n, float eps);
// x[i] = silu(gate[i]) * up[i], written over gate
void swiglu(float* gate, const float* up, int64_t n);
void add_inplace(float* y, const float* x, int64_t n);

}  // namespace pagedchat::cpu
