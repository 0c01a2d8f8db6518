#include "engine/quantize/gptq.h"

#include <algorithm>
#include <cmath>

#include "engine/common/error.h"
#include "engine/quant/quant.h"
#include "engine/quantize/quantize_rows.h"

namespace pagedchat::quantize {

namespace {

// In-place lower Cholesky factor of a (n x n, row-major); false if a is not positive definite.
bool cholesky_lower(std::vector<double>& a, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    double d = a[j * n + j];
    for (int64_t k = 0; k < j; ++k) d -= a[j * n + k] * a[j * n + k];
    if (!(d > 0)) return false;
    const double l = std::sqrt(d);
    a[j * n + j] = l;
    for (int64_t i = j + 1; i < n; ++i) {
      double s = a[i * n + j];
      const double* ri = &a[i * n];
      const double* rj = &a[j * n];
      for (int64_t k = 0; k < j; ++k) s -= ri[k] * rj[k];
      a[i * n + j] = s / l;
    }
    for (int64_t k = j + 1; k < n; ++k) a[j * n + k] = 0;
  }
  return true;
}

// The inverse of a lower-triangular l, lower-triangular; row i from the rows above it
// (inv[i][j] = -sum_k l[i][k] inv[k][j] / l[i][i]), every loop along a row.
std::vector<double> inverse_lower(const std::vector<double>& l, int64_t n) {
  std::vector<double> inv(static_cast<size_t>(n * n), 0.0);
  std::vector<double> acc(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    std::fill(acc.begin(), acc.begin() + i, 0.0);
    for (int64_t k = 0; k < i; ++k) {
      const double lik = l[i * n + k];
      if (lik == 0) continue;
      const double* row = &inv[k * n];
      for (int64_t j = 0; j <= k; ++j) acc[j] += lik * row[j];
    }
    const double d = l[i * n + i];
    for (int64_t j = 0; j < i; ++j) inv[i * n + j] = -acc[j] / d;
    inv[i * n + i] = 1.0 / d;
  }
  return inv;
}

}  // namespace

std::vector<double> inverse_cholesky_upper(const std::vector<double>& h, int64_t n, double damp) {
  double mean = 0;
  for (int64_t i = 0; i < n; ++i) mean += h[i * n + i];
  mean /= static_cast<double>(n);
  std::vector<double> u(static_cast<size_t>(n * n), 0.0);
  if (!(mean > 0)) {  // no token reached these columns: nothing to compensate with
    for (int64_t i = 0; i < n; ++i) u[i * n + i] = 1;
    return u;
  }
  // With J the reversal, chol(J H J) = L gives H^-1 = (J L^-1 J)^T (J L^-1 J), and J L^-1 J is
  // upper triangular: one factorisation and one triangular inverse instead of inverting H.
  for (double d = damp; ; d *= 10) {
    std::vector<double> a(static_cast<size_t>(n * n));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) a[i * n + j] = h[(n - 1 - i) * n + (n - 1 - j)];
    for (int64_t i = 0; i < n; ++i) a[i * n + i] += d * mean;
    if (!cholesky_lower(a, n)) {
      if (d > 1e3) fail("a Hessian block is not positive definite even dampened: the calibration is broken");
      continue;
    }
    const std::vector<double> inv = inverse_lower(a, n);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) u[i * n + j] = inv[(n - 1 - i) * n + (n - 1 - j)];
    return u;
  }
}

GptqFactors GptqFactors::of(const HessianBlocks& h, double damp) {
  GptqFactors f;
  for (size_t b = 0; b < h.starts.size(); ++b)
    f.upper.push_back(inverse_cholesky_upper(std::vector<double>(h.blocks[b].begin(), h.blocks[b].end()), h.block_size(b), damp));
  return f;
}

GptqTensor::GptqTensor(const HessianBlocks& h, const GptqFactors& factors, GgmlType type)
    : type_(type), cols_(h.cols), group_(ggml_type_traits(type).block_size) {
  if (!is_quantized(type)) fail("a GPTQ pass needs a quantized type");
  diagonal_.resize(static_cast<size_t>(cols_));
  for (size_t b = 0; b < h.starts.size(); ++b) {
    const int64_t n = h.block_size(b), first = h.starts[b];
    if (n % group_ != 0) fail("a Hessian block of %lld columns does not hold whole blocks of %lld", (long long)n, (long long)group_);
    for (int64_t i = 0; i < n; ++i) diagonal_[static_cast<size_t>(first + i)] = h.blocks[b][i * n + i];
    const std::vector<double>& u = factors.upper[b];
    for (int64_t p = 0; p < n; p += group_) {
      Group g{first + p, n - p - group_, {}};
      g.update.resize(static_cast<size_t>(group_ * g.rest));
      // Back substitution: U_SS M = U_ST, U_SS upper triangular.
      std::vector<double> m(static_cast<size_t>(group_ * g.rest));
      for (int64_t r = group_ - 1; r >= 0; --r) {
        const double* ur = &u[(p + r) * n];
        double* mr = &m[r * g.rest];
        for (int64_t t = 0; t < g.rest; ++t) mr[t] = ur[p + group_ + t];
        for (int64_t c = r + 1; c < group_; ++c) {
          const double k = ur[p + c];
          const double* mc = &m[c * g.rest];
          for (int64_t t = 0; t < g.rest; ++t) mr[t] -= k * mc[t];
        }
        for (int64_t t = 0; t < g.rest; ++t) mr[t] /= ur[p + r];
      }
      for (size_t i = 0; i < m.size(); ++i) g.update[i] = static_cast<float>(m[i]);
      groups_.push_back(std::move(g));
    }
  }
}

void GptqTensor::quantize_row(float* x, void* dst, const float* importance) const {
  const float* weights = importance ? importance : diagonal_.data();
  const size_t group_bytes = ggml_row_size(type_, group_);
  std::vector<float> q(static_cast<size_t>(group_));
  std::vector<double> e(static_cast<size_t>(group_));
  auto* out = static_cast<uint8_t*>(dst);
  // The legacy types weigh each value by the whole row's mean square: the row's as it came.
  const bool row_mean_square = uses_row_mean_square(type_);
  float sigma2 = 0;
  if (row_mean_square) {
    for (int64_t c = 0; c < cols_; ++c) sigma2 += x[c] * x[c];
    sigma2 /= static_cast<float>(cols_);
  }
  for (const Group& g : groups_) {
    float* xs = x + g.start;
    uint8_t* bytes = out + static_cast<size_t>(g.start / group_) * group_bytes;
    // A group no calibration token reached has all-zero weights, which the weighted searches
    // cannot divide by: it is rounded plainly.
    double weight_sum = 0;
    for (int64_t c = 0; c < group_; ++c) weight_sum += weights[g.start + c];
    const float* group_weights = weight_sum > 0 ? weights + g.start : nullptr;
    if (row_mean_square)
      quantize_legacy_row(type_, xs, bytes, group_, group_weights, sigma2);
    else
      quantize_rows(type_, xs, bytes, 1, group_, group_weights);
    if (g.rest == 0) continue;
    dequantize_row(type_, bytes, q.data(), group_);
    for (int64_t c = 0; c < group_; ++c) e[c] = static_cast<double>(xs[c]) - q[c];
    float* xt = xs + group_;
    for (int64_t c = 0; c < group_; ++c) {
      if (e[c] == 0) continue;
      const float* mc = g.update.data() + c * g.rest;
      const auto ec = static_cast<float>(e[c]);
      for (int64_t t = 0; t < g.rest; ++t) xt[t] -= ec * mc[t];
    }
  }
}

}  // namespace pagedchat::quantize
