#pragma once
// One engine assembled from options: the backend (backend_registry.h), the KV pool sized from
// a block count, a memory budget or a number of full contexts (capped by what the device
// holds), and the Engine over them. The CLI's engine commands, the headless server and the
// app build their engine here, so a budget means the same number of blocks everywhere and the
// backend's own KV element size (not an assumed f32) turns bytes into blocks.

#include <cstdint>
#include <memory>
#include <string>

#include "engine/engine/engine.h"
#include "runtime/backend_registry.h"
#include "runtime/speculation_setup.h"

namespace pagedchat {

struct EngineOptions {
  BackendOptions backend;
  // block_size, max_batched_tokens, max_num_seqs, num_host_blocks as given. max_context: 0 or
  // more than the model's: the model's. num_blocks: 0 to size the pool from what follows.
  EngineConfig engine;
  int64_t kv_budget_bytes = 0;  // with num_blocks 0: the blocks this many bytes of KV hold
  int64_t host_budget_bytes = 0;  // with num_host_blocks 0: a host (swap) pool of this many bytes
  // With neither: room for this many sequences of max_context tokens; 0: all the device
  // offers (a GPU), or one context (host memory).
  int num_contexts = 0;
  SpeculationOptions speculation;  // drafts for decoding (runtime/speculation_setup.h)
};

// Blocks of per_block bytes (Backend::kv_block_bytes) that `bytes` of KV memory hold; at least 1.
int32_t kv_blocks_for_budget(uint64_t per_block, int64_t bytes);

struct AssembledEngine {
  AssembledEngine() = default;
  AssembledEngine(AssembledEngine&&) = default;
  // The engine in place goes first (engine, backend, then model), then the new one moves in:
  // an engine never outlives the backend and model it points at.
  AssembledEngine& operator=(AssembledEngine&& other) noexcept {
    if (this == &other) return *this;
    reset();
    model = std::move(other.model);
    backend = std::move(other.backend);
    engine = std::move(other.engine);
    backend_description = std::move(other.backend_description);
    matrix_bytes_per_token = other.matrix_bytes_per_token;
    num_blocks = other.num_blocks;
    num_host_blocks = other.num_host_blocks;
    speculation = std::move(other.speculation);
    max_context = other.max_context;
    return *this;
  }
  ~AssembledEngine() { reset(); }
  void reset() {
    engine.reset();
    backend.reset();
    model.reset();
  }
  explicit operator bool() const { return engine != nullptr; }

  // Destroyed in reverse order: the engine before the backend before the model.
  std::shared_ptr<const Model> model;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Engine> engine;
  std::string backend_description;  // BuiltBackend::description
  uint64_t matrix_bytes_per_token = 0;
  int32_t num_blocks = 0;
  int32_t num_host_blocks = 0;
  int32_t max_context = 0;
  std::string speculation;  // speculation_description(): "no speculation", "ngram, K = 6, adaptive"
};

// Throws Error (a bad option, no device, no memory) with nothing left allocated.
AssembledEngine assemble_engine(std::shared_ptr<const Model> model, const EngineOptions& options,
                                const LoadProgress& progress = {});

}  // namespace pagedchat
