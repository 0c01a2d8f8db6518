// The model and backend options of the CLI's engine commands (see backend_choice.h).
#include "app/cli/backend_choice.h"

#include "app/cli/default_model.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/common/error.h"
#include "engine/model/random_model.h"

#ifdef PAGEDCHAT_HAVE_CUDA
#include "kernels/cuda_backend.h"
#endif

namespace pagedchat::cli {

std::set<std::string> with_backend_options(std::set<std::string> options) {
  options.insert({"model", "random-weights", "weights-seed", "backend", "gpu-memory-fraction", "dtype"});
  return options;
}

std::unique_ptr<Model> load_model(const Args& args) {
  if (auto shape = args.get("random-weights")) {
    if (args.get("model")) fail("give --model or --random-weights, not both");
    return make_random_model(*shape, args.get_u64("weights-seed", 1));
  }
  return Model::load(resolve_model_path(args.get_or("model", "")));
}

BackendChoice make_backend(const Args& args, const Model& model, int threads, int32_t max_batch_tokens, int32_t block_size) {
  const std::string name = args.get_or("backend", "cpu");
  BackendChoice choice;
  if (name == "cpu") {
    if (args.get("gpu-memory-fraction") || args.get("dtype")) fail("--gpu-memory-fraction and --dtype are for --backend cuda");
    auto cpu = std::make_unique<CpuBackend>(model.weights, threads);
    choice.description = format("cpu, %d threads", cpu->num_threads());
    choice.backend = std::move(cpu);
    return choice;
  }
  if (name != "cuda") fail("unknown backend '%s' (cpu, cuda)", name.c_str());
#ifdef PAGEDCHAT_HAVE_CUDA
  kernels::CudaBackendConfig config;
  const std::string dtype = args.get_or("dtype", "bf16");
  if (dtype != "bf16" && dtype != "f16") fail("--dtype must be bf16 or f16 (got '%s')", dtype.c_str());
  config.dtype = dtype == "f16" ? kernels::KvDtype::F16 : kernels::KvDtype::BF16;
  config.max_batch_tokens = max_batch_tokens;
  const double fraction = args.get_double("gpu-memory-fraction", 0.9, 0.01, 1.0);
  auto cuda = std::make_unique<kernels::CudaBackend>(model.weights, config);
  choice.suggested_num_blocks = cuda->kv_blocks_that_fit(block_size, fraction);
  if (choice.suggested_num_blocks <= 0) fail("no GPU memory is left for the KV pool after the weights");
  choice.description = format("cuda, %s, %s, weights %.2f GiB", cuda->device_name().c_str(), dtype.c_str(),
                              cuda->weight_bytes() / 1073741824.0);
  choice.backend = std::move(cuda);
  return choice;
#else
  (void)model, (void)threads, (void)max_batch_tokens, (void)block_size;
  fail("--backend cuda: this pagedchat-cli was built without CUDA (configure with -DPAGEDCHAT_CUDA=ON on a machine with the CUDA toolkit)");
#endif
}

}  // namespace pagedchat::cli
