#pragma once
// What the CLI's engine commands share about where they run: the model (a file, or seeded
// random weights with --random-weights SHAPE) and the backend (--backend cpu | cuda). A build
// without CUDA refuses --backend cuda with a clear error. The CUDA backend's KV pool is sized
// from --gpu-memory-fraction (default 0.9) of the memory free after its weights and scratch.

#include <memory>
#include <set>
#include <string>

#include "app/cli/cli_args.h"
#include "engine/backend/backend.h"
#include "engine/model/model.h"

namespace pagedchat::cli {

// The option names the helpers below read: model, random-weights, weights-seed, backend,
// gpu-memory-fraction, dtype.
std::set<std::string> with_backend_options(std::set<std::string> options);

// --model PATH (or the default model), or --random-weights SHAPE with --weights-seed S (default 1).
std::unique_ptr<Model> load_model(const Args& args);

struct BackendChoice {
  std::unique_ptr<Backend> backend;
  // KV blocks the backend offers for block_size when the command sets none (0: the engine's
  // default, one max-context sequence). The CUDA backend: --gpu-memory-fraction of free memory.
  int32_t suggested_num_blocks = 0;
  std::string description;  // "cpu, 2 threads" or "cuda, NVIDIA H200, bf16"
};

// threads: the CPU backend's; max_batch_tokens: what the CUDA backend sizes its scratch for.
BackendChoice make_backend(const Args& args, const Model& model, int threads, int32_t max_batch_tokens, int32_t block_size);

}  // namespace pagedchat::cli
