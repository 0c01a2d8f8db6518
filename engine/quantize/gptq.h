#pragma once
// A GPTQ-style pass (Frantar et al., 2022, "GPTQ: accurate post-training quantization"): each
// weight row is quantized a group of columns at a time, left to right, and the error a group's
// rounding leaves is pushed onto the columns not yet quantized, as far as the calibration
// activations' second moments H = sum x x^T (hessian.h) say they can absorb it:
//
//   e = w_S - q_S;   w_T -= e · U_SS^-1 U_ST
//
// where U is the upper Cholesky factor of H^-1 (H dampened by 1% of its mean diagonal) and T
// the columns after the group S. That is the update minimising the layer's output error
// (w - q) H (w - q)^T over w_T with w_S fixed at its rounding. The groups are the type's own
// quantization blocks (256 columns for the K-quants, 32 for the legacy types), each rounded by
// the type's usual search (quantize_rows.h) with the importance weights (given, or H's diagonal),
// so the bytes are an ordinary file of that type: only the values rounded differ.
//
// The compensation stays within a Hessian block (hessian.h bounds them); rows are independent.

#include <cstdint>
#include <vector>

#include "engine/common/ggml_type.h"
#include "engine/quantize/hessian.h"

namespace pagedchat::quantize {

// The Cholesky factors of one Hessian's blocks: the costly part (O(n^3) a block), the same for
// every matrix that reads that input.
struct GptqFactors {
  std::vector<std::vector<double>> upper;  // per block: inverse_cholesky_upper
  static GptqFactors of(const HessianBlocks& h, double damp = 0.01);
};

class GptqTensor {
 public:
  // Prepares the compensation matrices for rows of h.cols columns written as `type`. Throws
  // Error if the type's blocks do not tile the Hessian's blocks.
  GptqTensor(const HessianBlocks& h, const GptqFactors& factors, GgmlType type);
  GptqTensor(const HessianBlocks& h, GgmlType type, double damp = 0.01)
      : GptqTensor(h, GptqFactors::of(h, damp), type) {}

  // x: one row (h.cols values), changed in place as the compensations land; dst: the row's
  // bytes. importance: h.cols weights for the type's search, or nullptr for H's diagonal.
  void quantize_row(float* x, void* dst, const float* importance = nullptr) const;

  const std::vector<float>& diagonal() const { return diagonal_; }
  int64_t group_size() const { return group_; }

 private:
  struct Group {
    int64_t start;              // first column
    int64_t rest;               // columns after the group within its Hessian block
    std::vector<float> update;  // [group_][rest]: U_SS^-1 U_ST
  };
  GgmlType type_;
  int64_t cols_, group_;
  std::vector<Group> groups_;
  std::vector<float> diagonal_;
};

// The upper Cholesky factor U of the inverse of the n x n symmetric matrix h dampened by
// damp x its mean diagonal (U^T U = (h + damp·mean·I)^-1), row-major; a matrix of zeros gives I.
// Exposed for its test.
std::vector<double> inverse_cholesky_upper(const std::vector<double>& h, int64_t n, double damp);

}  // namespace pagedchat::quantize
