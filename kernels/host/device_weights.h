#pragma once
// A model's weights on the device, uploaded once: every matrix expanded to the backend's 16-bit
// type (GGUF quantized formats dequantized there, by dequantize.cu), the matrices that share an
// input stacked so that each is one GEMM (Q|K|V, gate|up), norms, biases and RoPE frequencies
// as f32. One allocation holds it all. The host copy (the mapped file) is not needed afterwards,
// but ModelWeights must outlive the backend anyway (the engine holds the Model).

#include <cstdint>
#include <vector>

#include <cuda_runtime.h>

#include "engine/model/model_weights.h"
#include "kernels/host/device_buffer.h"
#include "kernels/common/kv_dtype.h"

namespace pagedchat::kernels {

struct DeviceLayer {
  const float* attn_norm = nullptr;  // [dim]
  const uint16_t* wqkv = nullptr;    // [q_dim + 2 kv_dim, dim] rows of wq, then wk, then wv
  const float* bqkv = nullptr;       // [q_dim + 2 kv_dim]; null without QKV bias
  const uint16_t* wo = nullptr;      // [dim, q_dim]
  const float* ffn_norm = nullptr;   // [dim]
  const uint16_t* w_gate_up = nullptr;  // [2 ffn_dim, dim] rows of w_gate, then w_up
  const uint16_t* w_down = nullptr;  // [dim, ffn_dim]
};

class DeviceWeights {
 public:
  // Throws Error when a matrix's type cannot be expanded or the memory cannot be had.
  DeviceWeights(const ModelWeights& w, KvDtype dtype, cudaStream_t stream);

  const uint16_t* embedding = nullptr;  // [vocab, dim]
  const uint16_t* output = nullptr;     // [vocab, dim]; the embedding when tied
  const float* output_norm = nullptr;   // [dim]
  const float* rope_inv_freq = nullptr; // [rope_dim / 2]
  std::vector<DeviceLayer> layers;

  size_t bytes() const { return storage_.bytes(); }
  // Bytes of the matrices one decode step reads (the output projection and every layer's).
  uint64_t matrix_bytes_per_token() const { return matrix_bytes_per_token_; }

 private:
  DeviceBuffer storage_;
  uint64_t matrix_bytes_per_token_ = 0;
};

}  // namespace pagedchat::kernels
