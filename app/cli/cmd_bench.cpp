// `bench quant`: dot-product throughput per weight type. `bench throughput`, `bench memory` and
// `bench chat` live in their own files (cmd_bench_throughput.cpp, cmd_bench_memory.cpp,
// cmd_bench_chat.cpp).
// `bench`: single-stream speed on one model: prompt tok/s (one prefill of N tokens) and
// decode tok/s (M greedy tokens, EOS ignored), for each thread count asked for, one request
// through the engine. Each figure is the median of --repeats runs, each on a fresh engine (a
// second run on the same one would find the prompt in the prefix cache); the machine is
// noisy, so compare figures of one run.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>

#include "app/cli/cli_args.h"
#include "app/cli/commands.h"
#include "app/cli/default_model.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/bench/quant_bench.h"
#include "engine/common/error.h"
#include "engine/engine/request_runner.h"
#include "engine/model/model.h"
#include "engine/quant/panel.h"
#include "engine/quant/quant.h"

namespace pagedchat::cli {
namespace {

std::vector<int> parse_thread_list(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end || v < 1 || v > 1024) fail("--threads must be a list like 1,2 (got '%s')", s.c_str());
    out.push_back(static_cast<int>(v));
  }
  if (out.empty()) fail("--threads is empty");
  return out;
}

// A prompt of n tokens made from ordinary English text, so the numbers resemble a chat.
std::vector<int32_t> bench_prompt(const Model& model, int n) {
  const char* text =
      "The history of computing is a story of abstractions built on abstractions, from relays and "
      "vacuum tubes to transistors, from machine code to compilers, and from single programs to "
      "operating systems that share one machine among many users. ";
  std::vector<int32_t> one = model.tokenizer->encode(text, false, false);
  if (one.empty()) fail("the model's tokenizer turns the benchmark text into no tokens");
  std::vector<int32_t> out;
  while (static_cast<int>(out.size()) < n) out.insert(out.end(), one.begin(), one.end());
  out.resize(n);
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int cmd_bench(const std::vector<std::string>& argv) {
  if (!argv.empty() && argv[0] == "throughput") return cmd_bench_throughput({argv.begin() + 1, argv.end()});
  if (!argv.empty() && argv[0] == "kernels") return cmd_bench_kernels({argv.begin() + 1, argv.end()});
  if (!argv.empty() && argv[0] == "decode") return cmd_bench_decode({argv.begin() + 1, argv.end()});
  if (!argv.empty() && argv[0] == "memory") return cmd_bench_memory({argv.begin() + 1, argv.end()});
  if (!argv.empty() && argv[0] == "chat") return cmd_bench_chat({argv.begin() + 1, argv.end()});
  if (!argv.empty() && argv[0] == "quant") {
    // Dot-product throughput per weight type (no model needed).
    Args args(std::vector<std::string>(argv.begin() + 1, argv.end()), {"threads"}, {});
    std::fputs(run_quant_bench(args.get_int("threads", 1, 1, 1024)).c_str(), stdout);
    return 0;
  }
  Args args(argv, {"model", "threads", "prompt-tokens", "decode-tokens", "repeats"}, {"json"});
  auto model = Model::load(resolve_model_path(args.get_or("model", "")));
  std::vector<int> thread_list = parse_thread_list(args.get_or("threads", "1,2"));
  int prompt_tokens = args.get_int("prompt-tokens", 128, 1, 1 << 16);
  int decode_tokens = args.get_int("decode-tokens", 128, 2, 1 << 16);
  int repeats = args.get_int("repeats", 3, 1, 100);
  bool json = args.flag("json");
  std::vector<int32_t> prompt = bench_prompt(*model, prompt_tokens);

  if (!json)
    std::printf("model %s (%.1f MiB of weights per token), SIMD %s, panels %s\n%8s %10s %14s %10s %14s\n",
                model->config().name.c_str(), model->weights.weight_bytes() / 1048576.0, quant_simd_name(),
                std::string(panel_kernel_name(default_panel_kernel())).c_str(),
                "threads", "prompt", "prompt tok/s", "decode", "decode tok/s");
  for (int threads : thread_list) {
    CpuBackend backend(model->weights, threads);
    EngineConfig ec;
    ec.max_context = prompt_tokens + decode_tokens + 1;
    Request request;
    request.prompt = prompt;
    request.params.max_tokens = decode_tokens;
    request.params.ignore_eos = true;
    std::vector<double> prompt_rates, decode_rates;
    for (int r = 0; r < repeats; ++r) {
      Engine engine(*model, backend, ec);
      RequestRunner runner(engine);
      RequestRun res = runner.run(request);
      if (!res.ok()) fail("%s", res.error.c_str());
      prompt_rates.push_back(prompt_tokens / res.prompt_seconds);
      // The first token comes from the prefill's logits; decode_seconds covers the rest.
      decode_rates.push_back((res.tokens.size() - 1) / res.decode_seconds);
    }
    double p = median(prompt_rates), d = median(decode_rates);
    if (json)
      std::printf(
          "{\"engine\":\"pagedchat\",\"threads\":%d,\"prompt_tokens\":%d,\"prompt_tok_s\":%.2f,"
          "\"decode_tokens\":%d,\"decode_tok_s\":%.2f}\n",
          threads, prompt_tokens, p, decode_tokens, d);
    else
      std::printf("%8d %10d %14.1f %10d %14.1f\n", threads, prompt_tokens, p, decode_tokens, d);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace pagedchat::cli
