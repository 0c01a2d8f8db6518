#pragma once
// The one place a backend is built from options, as ggml's backend registry is: the CLI, the
// headless server and the app all call make_backend(), so "cpu" and "cuda", the 16-bit type, the
// share of GPU memory for the KV pool and the refusal without CUDA mean the same everywhere.
// Qt-free; it sits above engine/ and kernels/ (the only library that includes kernels/ headers
// for the executables), so neither the CLI's commands nor the app include a CUDA header.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/model/load_progress.h"
#include "engine/model/model.h"

namespace pagedchat {

struct BackendOptions {
  std::string name = "cpu";      // "cpu" or "cuda"
  int threads = 0;               // cpu: forward-pass threads, 0 = all cores
  bool float_activations = false;  // cpu: f32 activations into the matmuls (check backend's reference)
  // The KV pool's element type: cpu f32, f16 (the default) or q8_0; cuda keeps KV in its
  // 16-bit type, so there only that type's name (or empty) is accepted.
  std::string kv_type;
  // cuda only (an error for cpu when set, so a typo on the command line is not ignored):
  std::string dtype;               // "bf16" (default) or "f16": weights, activations and KV
  double gpu_memory_fraction = 0;  // share of the memory free after the weights for the KV pool; 0: 0.9
  int32_t max_batch_tokens = 512;  // cuda: scratch sized for this many tokens per forward pass
};

struct BuiltBackend {
  std::unique_ptr<Backend> backend;
  // The most KV blocks of the asked block size the device holds (0: no device limit, host
  // memory: the engine's pool is sized by its own options).
  int32_t max_num_blocks = 0;
  std::string description;              // "cpu, 2 threads, f16 KV" or "cuda, NVIDIA H200, bf16, weights 1.23 GiB"
  uint64_t matrix_bytes_per_token = 0;  // cuda: bytes one decode step must read at least (0: not measured)
};

// Built into this program (cuda needs PAGEDCHAT_CUDA), and for cuda a device is there.
bool backend_built(const std::string& name);
bool cuda_available();
// Throws Error with a clear message: an unknown name, options of another backend, cuda in a
// build without it or on a machine without a GPU, no device memory left for the KV pool.
BuiltBackend make_backend(const BackendOptions& options, const Model& model, int32_t block_size,
                          const LoadProgress& progress = {});

}  // namespace pagedchat
