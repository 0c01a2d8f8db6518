// Building a backend from options (see backend_registry.h).
#include "runtime/backend_registry.h"

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/common/error.h"

#ifdef PAGEDCHAT_HAVE_CUDA
#include "kernels/host/cuda_backend.h"
#endif

namespace pagedchat {

bool backend_built(const std::string& name) {
#ifdef PAGEDCHAT_HAVE_CUDA
  if (name == "cuda") return true;
#endif
  return name == "cpu";
}

bool cuda_available() {
#ifdef PAGEDCHAT_HAVE_CUDA
  return kernels::cuda_device_count() > 0;
#else
  return false;
#endif
}

BuiltBackend make_backend(const BackendOptions& options, const Model& model, int32_t block_size,
                          const LoadProgress& progress) {
  BuiltBackend built;
  if (options.name == "cpu") {
    if (!options.dtype.empty() || options.gpu_memory_fraction != 0)
      fail("the GPU memory fraction and the 16-bit type are options of the cuda backend");
    const KvType kv_type = options.kv_type.empty() ? KvType::F16 : parse_kv_type(options.kv_type);
    auto cpu = std::make_unique<CpuBackend>(
        model.weights, options.threads, kv_type,
        options.float_activations ? cpu::MatmulPrecision::kFloatActivations : cpu::MatmulPrecision::kQuantizedActivations,
        progress);
    built.description = format("cpu, %d threads, %s KV", cpu->num_threads(), kv_type_name(kv_type));
    built.backend = std::move(cpu);
    return built;
  }
  if (options.name != "cuda") fail("unknown backend '%s' (cpu, cuda)", options.name.c_str());
#ifdef PAGEDCHAT_HAVE_CUDA
  if (!options.kv_type.empty() && options.kv_type != "bf16" && options.kv_type != "f16")
    fail("the cuda backend keeps KV in its 16-bit type (bf16 or f16); KV type %s is for the cpu backend",
         options.kv_type.c_str());
  const std::string dtype = !options.dtype.empty() ? options.dtype : !options.kv_type.empty() ? options.kv_type : "bf16";
  if (dtype != "bf16" && dtype != "f16") fail("the cuda backend's type must be bf16 or f16 (got '%s')", dtype.c_str());
  if (!options.kv_type.empty() && options.kv_type != dtype)
    fail("the cuda backend keeps KV in its 16-bit type (%s here); KV type %s is for the cpu backend", dtype.c_str(),
         options.kv_type.c_str());
  const double fraction = options.gpu_memory_fraction == 0 ? 0.9 : options.gpu_memory_fraction;
  if (fraction < 0.01 || fraction > 1.0) fail("the GPU memory fraction must be in [0.01, 1] (got %g)", fraction);
  if (kernels::cuda_device_count() <= 0)
    fail("the cuda backend needs an NVIDIA GPU, and the CUDA runtime finds none on this machine");
  kernels::CudaBackendConfig config;
  config.dtype = dtype == "f16" ? kernels::KvDtype::F16 : kernels::KvDtype::BF16;
  config.max_batch_tokens = std::max(options.max_batch_tokens, 1);
  auto cuda = std::make_unique<kernels::CudaBackend>(model.weights, config);
  built.max_num_blocks = cuda->kv_blocks_that_fit(block_size, fraction);
  if (built.max_num_blocks <= 0) fail("no GPU memory is left for the KV pool after the weights");
  built.description = format("cuda, %s, %s, weights %.2f GiB", cuda->device_name().c_str(), dtype.c_str(),
                             cuda->weight_bytes() / 1073741824.0);
  built.matrix_bytes_per_token = cuda->matrix_bytes_per_token();
  built.backend = std::move(cuda);
  return built;
#else
  (void)model, (void)block_size, (void)progress;
  fail("this build has no cuda backend (configure with -DPAGEDCHAT_CUDA=ON on a machine with the CUDA toolkit)");
#endif
}

}  // namespace pagedchat
