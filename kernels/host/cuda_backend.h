#pragma once
// The CUDA backend: the Llama forward pass of CpuBackend on one GPU. Weights are uploaded once
// as f16 or bf16 (device_weights.h); linear layers run through cuBLAS (gemm.h), the element-wise
// steps through the fused kernels of layer_kernels.h, attention through the paged kernels
// (kv_write, prefill_attention, decode_attention) over an HND pool of the same 16-bit type;
// copy-on-write through block_copy, swapping through swap_blocks and a pinned host pool.
// Sampling stays on the host: forward() returns the wanted rows' logits like every backend.
// This header includes no CUDA header, so the CLI can hold a CudaBackend without them.

#include <cstdint>
#include <memory>
#include <string>

#include "engine/backend/backend.h"
#include "engine/model/model_weights.h"
#include "kernels/common/kv_dtype.h"

namespace pagedchat::kernels {

struct CudaBackendConfig {
  KvDtype dtype = KvDtype::BF16;  // weights into cuBLAS, activations into cuBLAS, and the KV pool
  int device = 0;
  // Scratch (activations, logits) is sized for this many tokens per forward pass at start, so
  // the KV pool can take the rest; a bigger batch grows it (and may then find no memory).
  int32_t max_batch_tokens = 512;
};

// GPUs the CUDA runtime sees (0 without a device or a driver); never throws. Declared here, free
// of CUDA headers, so that callers such as the app's settings can ask.
int cuda_device_count();

class CudaBackend final : public Backend {
 public:
  // weights must outlive the backend. Throws Error without a device, for a shape the kernels do
  // not support (head_dim 64, 128 or 256), or when the weights do not fit.
  CudaBackend(const ModelWeights& weights, CudaBackendConfig config);
  ~CudaBackend() override;

  std::string_view name() const override { return "cuda"; }
  void allocate_kv(const KvCacheShape& shape) override;
  const KvCacheShape& kv_shape() const override;
  uint64_t kv_block_bytes(int32_t block_size) const override;  // f16 or bf16 (config.dtype)
  void forward(const ForwardBatch& batch, std::vector<float>& logits) override;
  void copy_blocks(std::span<const BlockCopy> copies) override;
  void allocate_host_kv(int num_blocks) override;
  void swap_out(std::span<const BlockCopy> pairs) override;
  void swap_in(std::span<const BlockCopy> pairs) override;

  // KV blocks of block_size tokens that fit in `fraction` of the device memory free now (after
  // the weights and the scratch), as vLLM's gpu_memory_utilization sizes its pool.
  int32_t kv_blocks_that_fit(int32_t block_size, double fraction) const;
  std::string device_name() const;
  uint64_t weight_bytes() const;            // on the device
  uint64_t matrix_bytes_per_token() const;  // what one decode step must read at least
  void synchronize();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pagedchat::kernels
