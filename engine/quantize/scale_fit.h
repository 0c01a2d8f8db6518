#pragma once
// The searches that choose a group's scale (and minimum) when a model file is quantized: for
// each group of weights, the scale whose rounded levels reproduce the weights with the least
// weighted squared error, found by trying a few scales near the obvious one. These are the
// searches llama.cpp's ggml-quants.c runs (named beside each function), reproduced operation
// for operation, in the same order and in float: a file we quantize must be the file
// llama-quantize writes, byte for byte (tests/engine/quantize). So no expression here may be
// reordered, fused or vectorized; this folder is compiled with -ffp-contract=off.
//
// `weights` are the importance of each element in the error (an importance matrix's column
// statistics times the element's own size, or the element's square when there is none).

#include <cstdint>
#include <cstring>

namespace pagedchat::quantize {

// Rounds to the nearest integer, ties to even, by adding 1.5 * 2^23 (valid for |x| < 2^22):
// what the K-quants' reference rounds with, kept so ties break as they do there. Inline: the
// searches call it for every element of every trial scale.
inline int nearest_int(float x) {
  const float shifted = x + 12582912.f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  return (bits & 0x007fffff) - 0x00400000;
}

// The element of largest magnitude, with its sign (the first of equals); *magnitude: |it|.
inline float signed_absmax(int n, const float* x, float* magnitude) {
  float amax = 0, max = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = x[i] < 0 ? -x[i] : x[i];
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  *magnitude = amax;
  return max;
}

// Symmetric levels in [-nmax, nmax - 1] (stored as level + nmax in `levels`) for n elements:
// the scale of least weighted error among -max/(nmax + 0.1 i), i in [-9, 9]. weights == nullptr
// weighs each element by its square. Returns the scale (x ~ scale * level). (make_qx_quants,
// rmse_type 1.)
float fit_symmetric(int n, int nmax, const float* x, int8_t* levels, const float* weights);

// As fit_symmetric for Q3_K's groups: one scale, then up to five passes moving single levels
// while the error falls. Levels stored as level + nmax. (make_q3_quants with do_rmse.)
float fit_symmetric_refined(int n, int nmax, const float* x, int8_t* levels);

// Levels in [0, nmax] with a scale and a minimum (x ~ scale * level - *neg_min), trying
// nstep + 1 scales (rmin + rdelta i + nmax) / (max - min) and a least-squares scale and minimum
// for each. `scratch` holds n levels. use_abs: the error is |diff| instead of diff^2.
// (make_qkx2_quants: the plain K-quants.)
float fit_affine(int n, int nmax, const float* x, const float* weights, uint8_t* levels,
                 float* neg_min, uint8_t* scratch, float rmin, float rdelta, int nstep, bool use_abs);

// fit_affine as the importance-weighted K-quants run it: weights == nullptr weighs by the
// square, and a group whose maximum does not exceed its (clamped) minimum is all zeros.
// (make_qkx3_quants.)
float fit_affine_weighted(int n, int nmax, const float* x, const float* weights, uint8_t* levels,
                          float* neg_min, uint8_t* scratch, float rmin, float rdelta, int nstep,
                          bool use_abs);

// Non-negative levels in [0, nmax] for non-negative x (a super-block's sub-block scales or
// minima), weighted by `weights`, refined as fit_symmetric_refined. (make_qp_quants.)
float fit_positive(int n, int nmax, const float* x, uint8_t* levels, const float* weights);

}  // namespace pagedchat::quantize
