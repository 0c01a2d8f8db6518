// Uploading the weights (see device_weights.h) in two walks over the same tensors: the first
// sizes the one allocation (and the staging buffer), the second copies each tensor into its
// place. A matrix already in the target type is copied as is; any other goes through the
// staging buffer and the dequantize kernel.
#include "kernels/host/device_weights.h"

#include <algorithm>
#include <initializer_list>

#include "kernels/host/cuda_check.h"
#include "kernels/device/dequantize.h"

namespace pagedchat::kernels {
namespace {

constexpr size_t kAlign = 256;  // cuBLAS and the 16-byte loads want aligned tensors

size_t aligned(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

bool is_direct(GgmlType type, KvDtype dtype) {
  return (type == GgmlType::BF16 && dtype == KvDtype::BF16) || (type == GgmlType::F16 && dtype == KvDtype::F16);
}

// Places tensors one after another from `base`; with a null base it only counts the bytes.
class Uploader {
 public:
  Uploader(uint8_t* base, KvDtype dtype, cudaStream_t stream, const DeviceBuffer* staging)
      : base_(base), dtype_(dtype), stream_(stream), staging_(staging) {}

  // Matrices with the same columns stacked row-wise into one [sum of rows, cols] matrix.
  const uint16_t* matrix(std::initializer_list<const WeightMatrix*> parts) {
    int64_t rows = 0;
    const int64_t cols = (*parts.begin())->cols;
    for (const WeightMatrix* m : parts) {
      if (m->cols != cols) fail("stacked weight matrices of %lld and %lld columns", (long long)cols, (long long)m->cols);
      rows += m->rows;
    }
    auto* dst = reinterpret_cast<uint16_t*>(place(static_cast<size_t>(rows * cols) * 2));
    int64_t row = 0;
    for (const WeightMatrix* m : parts) {
      const size_t raw = static_cast<size_t>(m->rows) * m->row_bytes;
      if (!is_direct(m->type, dtype_)) staging_bytes_ = std::max(staging_bytes_, raw);
      if (dst) upload(*m, dst + row * cols, raw);
      row += m->rows;
    }
    return dst;
  }

  const float* vec(const std::vector<float>& v) {
    if (v.empty()) return nullptr;
    auto* dst = reinterpret_cast<float*>(place(v.size() * sizeof(float)));
    if (dst) PC_CUDA_CHECK(cudaMemcpyAsync(dst, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice, stream_));
    return dst;
  }

  // Q, K and V biases stacked like wqkv, or null without them.
  const float* biases(const LayerWeights& L) {
    if (L.bq.empty()) return nullptr;
    std::vector<float> b(L.bq);
    b.insert(b.end(), L.bk.begin(), L.bk.end());
    b.insert(b.end(), L.bv.begin(), L.bv.end());
    const float* dst = vec(b);
    if (dst) PC_CUDA_CHECK(cudaStreamSynchronize(stream_));  // b is a temporary
    return dst;
  }

  size_t bytes() const { return offset_; }
  size_t staging_bytes() const { return staging_bytes_; }

 private:
  uint8_t* place(size_t bytes) {
    uint8_t* p = base_ ? base_ + offset_ : nullptr;
    offset_ += aligned(bytes);
    return p;
  }

  void upload(const WeightMatrix& m, uint16_t* dst, size_t raw) {
    if (is_direct(m.type, dtype_)) {
      PC_CUDA_CHECK(cudaMemcpyAsync(dst, m.data, raw, cudaMemcpyHostToDevice, stream_));
      return;
    }
    PC_CUDA_CHECK(cudaMemcpyAsync(staging_->get(), m.data, raw, cudaMemcpyHostToDevice, stream_));
    cuda::dequantize_rows_16(m.type, staging_->get(), dst, dtype_, m.rows, m.cols, stream_);
    PC_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the staging buffer is reused next
  }

  uint8_t* base_;
  KvDtype dtype_;
  cudaStream_t stream_;
  const DeviceBuffer* staging_;
  size_t offset_ = 0, staging_bytes_ = 0;
};

// Every tensor, in one order for both walks; sets the pointers of `out` (null in the sizing walk).
void walk(const ModelWeights& w, Uploader& up, DeviceWeights& out) {
  out.embedding = up.matrix({&w.token_embedding});
  out.output = w.tied_embeddings ? out.embedding : up.matrix({&w.output});
  out.output_norm = up.vec(w.output_norm);
  out.rope_inv_freq = up.vec(w.rope_inv_freq);
  out.layers.resize(w.layers.size());
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const LayerWeights& L = w.layers[l];
    DeviceLayer& d = out.layers[l];
    d.attn_norm = up.vec(L.attn_norm);
    d.wqkv = up.matrix({&L.wq, &L.wk, &L.wv});
    d.bqkv = up.biases(L);
    d.wo = up.matrix({&L.wo});
    d.ffn_norm = up.vec(L.ffn_norm);
    d.w_gate_up = up.matrix({&L.w_gate, &L.w_up});
    d.w_down = up.matrix({&L.w_down});
  }
}

}  // namespace

DeviceWeights::DeviceWeights(const ModelWeights& w, KvDtype dtype, cudaStream_t stream) {
  Uploader sizing(nullptr, dtype, stream, nullptr);
  walk(w, sizing, *this);
  storage_ = DeviceBuffer(sizing.bytes());
  const DeviceBuffer staging(sizing.staging_bytes());
  Uploader filling(storage_.get<uint8_t>(), dtype, stream, &staging);
  walk(w, filling, *this);
  PC_CUDA_CHECK(cudaStreamSynchronize(stream));
  const ModelConfig& c = w.config;
  matrix_bytes_per_token_ = 2ull * static_cast<uint64_t>(c.vocab_size) * c.dim;
  for (size_t l = 0; l < w.layers.size(); ++l)
    matrix_bytes_per_token_ += 2ull * c.dim * (c.q_dim() + 2ull * c.kv_dim() + c.q_dim() + 3ull * c.ffn_dim);
}

}  // namespace pagedchat::kernels
