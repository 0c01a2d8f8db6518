// Sizing the KV pool and assembling backend + engine (see engine_assembly.h).
#include "runtime/engine_assembly.h"

#include <algorithm>

namespace pagedchat {

int32_t kv_blocks_for_budget(uint64_t per_block, int64_t bytes) {
  if (per_block == 0 || bytes <= 0) return 1;
  return static_cast<int32_t>(std::clamp<int64_t>(bytes / static_cast<int64_t>(per_block), 1, 1 << 24));
}

AssembledEngine assemble_engine(std::shared_ptr<const Model> model, const EngineOptions& options,
                                const LoadProgress& progress) {
  EngineConfig config = options.engine;
  const int32_t model_context = model->config().context_length;
  if (config.max_context <= 0 || config.max_context > model_context) config.max_context = model_context;
  if (config.block_size <= 0) fail("bad block size %d", config.block_size);
  BuiltBackend built = make_backend(options.backend, *model, config.block_size, progress);
  const int32_t blocks_per_context = (config.max_context + config.block_size - 1) / config.block_size;
  if (config.num_blocks <= 0) {
    if (options.kv_budget_bytes > 0)
      config.num_blocks = kv_blocks_for_budget(built.backend->kv_block_bytes(config.block_size), options.kv_budget_bytes);
    else if (options.num_contexts > 0)
      config.num_blocks = blocks_per_context * options.num_contexts;
    else
      config.num_blocks = built.max_num_blocks > 0 ? built.max_num_blocks : blocks_per_context;
  }
  if (config.num_host_blocks <= 0 && options.host_budget_bytes > 0)
    config.num_host_blocks = kv_blocks_for_budget(built.backend->kv_block_bytes(config.block_size), options.host_budget_bytes);
  // On a GPU, never more than the share of free memory it offers (as vLLM sizes its pool).
  if (built.max_num_blocks > 0) config.num_blocks = std::min(config.num_blocks, built.max_num_blocks);
  configure_speculation(options.speculation, *model, config);
  AssembledEngine a;
  a.model = std::move(model);
  a.backend = std::move(built.backend);
  a.backend_description = std::move(built.description);
  a.matrix_bytes_per_token = built.matrix_bytes_per_token;
  a.engine = std::make_unique<Engine>(*a.model, *a.backend, config);
  a.num_blocks = config.num_blocks;
  a.num_host_blocks = config.num_host_blocks;
  a.max_context = config.max_context;
  a.speculation = speculation_description(options.speculation, config);
  return a;
}

}  // namespace pagedchat
