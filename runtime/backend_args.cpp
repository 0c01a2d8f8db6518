// The backend options' help and checks, shared by the CLI, the server and the app.
#include "runtime/backend_args.h"

#include <cstdlib>

#include "engine/backend/kv_type.h"

namespace pagedchat {

const std::vector<BackendArgHelp>& backend_arg_help() {
  static const std::vector<BackendArgHelp> help = {
      {"backend", "name", "Where the forward pass runs: cpu, or cuda (an NVIDIA GPU; a build with CUDA)."},
      {"dtype", "type", "cuda: the 16-bit type of weights, activations and KV: bf16 or f16 (default bf16)."},
      {"kv-type", "type", "The KV pool's element type: cpu f16 (default), f32 or q8_0; cuda only its --dtype."},
      {"gpu-memory-fraction", "x", "cuda: share of the GPU memory free after the weights for the KV pool (default 0.9)."},
  };
  return help;
}

const std::vector<std::string>& cpu_kv_types() {
  static const std::vector<std::string> types = {"f16", "q8_0", "f32"};
  return types;
}

namespace {

[[noreturn]] void refuse(const std::string& what, bool usage = true) { throw BackendArgError(what, usage); }

bool is_cuda_dtype(const std::string& t) { return t == "bf16" || t == "f16"; }

}  // namespace

BackendOptions check_backend_args(const BackendArgValues& given) {
  BackendOptions o;
  o.name = given.backend.value_or("cpu");
  if (o.name != "cpu" && o.name != "cuda") refuse(format("--backend: unknown backend '%s' (cpu, cuda)", o.name.c_str()));
  o.kv_type = given.kv_type.value_or("");
  if (o.name == "cpu") {
    if (given.dtype || given.gpu_memory_fraction) refuse("--dtype and --gpu-memory-fraction are for --backend cuda");
    if (given.kv_type) {
      try {
        parse_kv_type(o.kv_type);
      } catch (const Error&) {
        refuse(format("--kv-type must be f32, f16 or q8_0 (got '%s')", o.kv_type.c_str()));
      }
    }
    return o;
  }
  // cuda keeps KV in its 16-bit type: --kv-type may only name it (and then stands for --dtype).
  if (given.kv_type && !is_cuda_dtype(o.kv_type))
    refuse(format("--kv-type must be the cuda --dtype, bf16 or f16 (got '%s')", o.kv_type.c_str()));
  o.dtype = given.dtype.value_or(given.kv_type.value_or("bf16"));
  if (!is_cuda_dtype(o.dtype)) refuse(format("--dtype must be bf16 or f16 (got '%s')", o.dtype.c_str()));
  if (given.dtype && given.kv_type && o.dtype != o.kv_type)
    refuse(format("--kv-type %s differs from --dtype %s: cuda keeps KV in its --dtype", o.kv_type.c_str(), o.dtype.c_str()));
  o.gpu_memory_fraction = 0.9;
  if (given.gpu_memory_fraction) {
    char* end = nullptr;
    const std::string& text = *given.gpu_memory_fraction;
    o.gpu_memory_fraction = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(o.gpu_memory_fraction >= 0.01 && o.gpu_memory_fraction <= 1.0))
      refuse(format("--gpu-memory-fraction must be a number from 0.01 to 1 (got '%s')", text.c_str()));
  }
  // Refused before anything loads, with the reason: a build without CUDA, or no GPU here.
  if (!backend_built("cuda"))
    refuse("--backend cuda: this build has no CUDA backend (configure with -DPAGEDCHAT_CUDA=ON on a machine with the CUDA toolkit)",
           false);
  if (!cuda_available()) refuse("--backend cuda needs an NVIDIA GPU, and the CUDA runtime finds none on this machine", false);
  return o;
}

}  // namespace pagedchat
