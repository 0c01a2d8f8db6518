// `bench decode`: one request at batch 1 through the engine on the chosen backend (--backend
// cuda with --random-weights llama-3.1-8b is the GPU figure), greedy with EOS ignored: ms per
// decoded token, median of --repeats runs, each on a fresh engine after one warm-up run. On
// CUDA it also measures the floor: one decode step must read every weight matrix once, so it
// takes at least (matrix bytes) / (device-to-device copy bandwidth); the bar is 1.3x that.

#include <algorithm>
#include <cstdio>
#include <random>

#include "app/cli/backend_choice.h"
#include "runtime/gpu_tools.h"
#include "app/cli/cli_args.h"
#include "app/cli/commands.h"
#include "engine/common/error.h"
#include "engine/engine/request_runner.h"


namespace pagedchat::cli {

int cmd_bench_decode(const std::vector<std::string>& argv) {
  Args args(argv, with_backend_options({"prompt-tokens", "decode-tokens", "repeats", "threads", "block-size"}), {"json"});
  const int prompt_tokens = args.get_int("prompt-tokens", 128, 1, 1 << 16);
  const int decode_tokens = args.get_int("decode-tokens", 128, 2, 1 << 16);
  const int repeats = args.get_int("repeats", 3, 1, 100);
  const int block_size = args.get_block_size();
  const BackendOptions options = backend_options(args, args.get_int("threads", 0, 0, 1024), prompt_tokens);
  double copy_gbs = 0;
  if (options.name == "cuda") copy_gbs = device_copy_gbs();  // before the weights take the memory it needs
  auto model = load_model(args);
  BuiltBackend choice = pagedchat::make_backend(options, *model, block_size);
  const uint64_t matrix_bytes = choice.matrix_bytes_per_token > 0 ? choice.matrix_bytes_per_token : model->weights.weight_bytes();

  std::mt19937 rng(1);
  std::uniform_int_distribution<int32_t> token(0, model->config().vocab_size - 1);
  std::vector<int32_t> prompt(static_cast<size_t>(prompt_tokens));
  for (int32_t& t : prompt) t = token(rng);
  EngineConfig ec;
  ec.block_size = block_size;
  ec.max_context = prompt_tokens + decode_tokens + 1;
  ec.max_batched_tokens = prompt_tokens;
  std::vector<double> ms;
  for (int run = 0; run <= repeats; ++run) {  // run 0 warms up (cuBLAS heuristics, first launches)
    Engine engine(*model, *choice.backend, ec);
    RequestRunner runner(engine);
    Request r;
    r.prompt = prompt;
    r.params.max_tokens = decode_tokens;
    r.params.ignore_eos = true;
    RequestRun out = runner.run(std::move(r));
    if (!out.ok()) fail("%s", out.error.c_str());
    if (run > 0) ms.push_back(1e3 * out.decode_seconds / static_cast<double>(out.tokens.size() - 1));
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2];
  const double floor_ms = copy_gbs > 0 ? 1e3 * static_cast<double>(matrix_bytes) / (copy_gbs * 1e9) : 0.0;
  const double ratio = floor_ms > 0 ? median / floor_ms : 0.0;
  if (args.flag("json")) {
    std::printf("{\"bench\":\"decode\",\"model\":\"%s\",\"backend\":\"%s\",\"ms_per_token\":%.4f,\"tok_s\":%.2f,"
                "\"matrix_gb\":%.3f,\"copy_gbs\":%.1f,\"floor_ms\":%.4f,\"ratio\":%.3f}\n",
                model->config().name.c_str(), choice.description.c_str(), median, 1e3 / median, matrix_bytes / 1e9, copy_gbs,
                floor_ms, ratio);
  } else {
    std::printf("decode at batch 1: %s on %s, %d prompt + %d decoded tokens, median of %d\n",
                model->config().name.c_str(), choice.description.c_str(), prompt_tokens, decode_tokens, repeats);
    std::printf("  %.3f ms/token (%.1f tok/s)\n", median, 1e3 / median);
    if (floor_ms > 0)
      std::printf("  floor %.3f ms (%.2f GB of matrices at %.0f GB/s device copy); ratio %.2fx, bar 1.3x: %s\n", floor_ms,
                  matrix_bytes / 1e9, copy_gbs, ratio, ratio <= 1.3 ? "met" : "NOT met");
  }
  return 0;
}

}  // namespace pagedchat::cli
