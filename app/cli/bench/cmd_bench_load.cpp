// `bench load`: what opening a model costs, in one process of its own: seconds to open and map
// the file, to build the CPU backend (packing its matrices into panels), and from the start to
// the first token of a 5-token prompt; and the peak resident memory by then (the kernel's
// VmHWM, which counts the mapped file's pages as they are read) against the file's size.
// The KV pool is sized for the prompt only, so the peak is the weights' and the packing's; the
// memory the process held before opening the model (its libraries) is reported and taken off.
// tests/bench/load_vs_llamacpp.sh runs it against llama.cpp.

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <sys/stat.h>

#include "app/cli/cli_args.h"
#include "app/cli/commands.h"
#include "app/cli/model_argument.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/common/error.h"
#include "engine/engine/request_runner.h"
#include "engine/model/model.h"

namespace pagedchat::cli {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The process's peak resident set so far, in bytes (0 where /proc is not there).
uint64_t peak_rss() {
  std::ifstream status("/proc/self/status");
  std::string key;
  uint64_t kb = 0;
  while (status >> key) {
    if (key == "VmHWM:") {
      status >> kb;
      return kb * 1024;
    }
    status.ignore(1 << 12, '\n');
  }
  return 0;
}

}  // namespace

int cmd_bench_load(const std::vector<std::string>& argv) {
  Args args(argv, {"model", "threads"}, {"json"});
  const std::string path = resolve_model_path(args.get_or("model", ""));
  const int threads = args.get_int("threads", 2, 1, 1024);
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) fail("cannot read '%s'", path.c_str());
  // What the process holds before the model (its libraries: cuBLAS's alone is most of it in a CUDA build).
  const uint64_t before = peak_rss();
  const Clock::time_point start = Clock::now();
  auto model = Model::load(path);
  const double opened = since(start);
  const uint64_t peak_opened = peak_rss();
  CpuBackend backend(model->weights, threads, KvType::F16);
  const double built = since(start);
  const uint64_t peak_built = peak_rss();
  Request request;
  request.prompt = model->tokenizer->encode("The capital of France is", false, false);
  request.params.max_tokens = 1;
  request.params.ignore_eos = true;
  EngineConfig ec;
  ec.max_context = static_cast<int>(request.prompt.size()) + 2;
  Engine engine(*model, backend, ec);
  RequestRunner runner(engine);
  const RequestRun res = runner.run(request);
  if (!res.ok()) fail("%s", res.error.c_str());
  const double first_token = since(start);
  const uint64_t peak = peak_rss();
  const auto file = static_cast<uint64_t>(st.st_size);
  if (args.flag("json")) {
    std::printf("{\"engine\":\"pagedchat\",\"file_bytes\":%llu,\"open_s\":%.3f,\"backend_s\":%.3f,"
                "\"first_token_s\":%.3f,\"peak_rss_bytes\":%llu,\"peak_rss_opened_bytes\":%llu,"
                "\"peak_rss_built_bytes\":%llu,\"rss_before_bytes\":%llu,\"packed_bytes\":%zu}\n",
                static_cast<unsigned long long>(file), opened, built, first_token,
                static_cast<unsigned long long>(peak), static_cast<unsigned long long>(peak_opened),
                static_cast<unsigned long long>(peak_built), static_cast<unsigned long long>(before),
                backend.packed_bytes());
  } else {
    std::printf("file %.0f MiB: opened in %.2f s, backend built (%.0f MiB packed) at %.2f s, first token at %.2f s; "
                "peak RSS %.0f MiB, %.0f MiB above the %.0f MiB the process held before the model (%.2fx the file; "
                "%.0f MiB once opened, %.0f MiB once built)\n",
                file / 1048576.0, opened, backend.packed_bytes() / 1048576.0, built, first_token, peak / 1048576.0,
                (peak - before) / 1048576.0, before / 1048576.0, static_cast<double>(peak - before) / static_cast<double>(file),
                peak_opened / 1048576.0, peak_built / 1048576.0);
  }
  return 0;
}

}  // namespace pagedchat::cli
