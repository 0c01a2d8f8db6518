// `bench quant`: dot-product throughput per weight type. `bench throughput`, `bench memory` and
// `bench chat` live in their own files (cmd_bench_throughput.cpp, cmd_bench_memory.cpp,
// cmd_bench_chat.cpp).
// `bench`: single-stream speed on one model: prompt tok/s (one prefill of N tokens) and
// decode tok/s (M greedy tokens after it, EOS ignored, so decode reads an N-token context),
// for each thread count and prompt length asked for, one request through the engine. Each figure is the median of --repeats runs, each on a fresh engine (a
// second run on the same one would find the prompt in the prefix cache); the machine is
// noisy, so compare figures of one run.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>

#include "app/cli/cli_args.h"
#include "app/cli/commands.h"
#include "app/cli/model_argument.h"
#include "engine/backend/cpu/attention/attention_kernel.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/bench/quant_bench.h"
#include "engine/bench/roofline.h"
#include "engine/common/error.h"
#include "engine/engine/request_runner.h"
#include "engine/model/model.h"
#include "engine/quant/panel/panel.h"
#include "engine/quant/quant.h"

namespace pagedchat::cli {
namespace {

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
  if (!argv.empty() && argv[0] == "attention") return cmd_bench_attention({argv.begin() + 1, argv.end()});
  if (!argv.empty() && argv[0] == "beam") return cmd_bench_beam({argv.begin() + 1, argv.end()});
  if (!argv.empty() && argv[0] == "structured") return cmd_bench_structured({argv.begin() + 1, argv.end()});
  if (!argv.empty() && argv[0] == "load") return cmd_bench_load({argv.begin() + 1, argv.end()});
  if (!argv.empty() && argv[0] == "speculative") return cmd_bench_speculative({argv.begin() + 1, argv.end()});
  if (!argv.empty() && argv[0] == "kv-disk") return cmd_bench_kv_disk({argv.begin() + 1, argv.end()});
  if (!argv.empty() && argv[0] == "kv-quality") return cmd_bench_kv_quality({argv.begin() + 1, argv.end()});
  if (!argv.empty() && argv[0] == "roofline") return cmd_bench_roofline({argv.begin() + 1, argv.end()});
  if (!argv.empty() && argv[0] == "quant-quality") return cmd_bench_quant_quality({argv.begin() + 1, argv.end()});
  if (!argv.empty() && argv[0] == "quant") {
    // Dot-product throughput per weight type (no model needed).
    Args args(std::vector<std::string>(argv.begin() + 1, argv.end()), {"threads"}, {});
    std::fputs(run_quant_bench(args.get_int("threads", 1, 1, 1024)).c_str(), stdout);
    return 0;
  }
  Args args(argv, {"model", "threads", "prompt-tokens", "decode-tokens", "repeats", "kv-type"}, {"json"});
  auto model = Model::load(resolve_model_path(args.get_or("model", "")));
  const std::vector<int> thread_list = args.get_int_list("threads", "1,2", 1024);
  const std::vector<int> prompt_list = args.get_int_list("prompt-tokens", "128", 1 << 20);
  int decode_tokens = args.get_int("decode-tokens", 128, 2, 1 << 16);
  int repeats = args.get_int("repeats", 3, 1, 100);
  const KvType kv_type = parse_kv_type(args.get_or("kv-type", "f16"));
  bool json = args.flag("json");
  const ModelConfig& mc = model->config();
  const int64_t token_bytes = kv_token_bytes(kv_type, mc.num_layers, mc.num_kv_heads, mc.head_dim);

  if (!json)
    std::printf("model %s (%.1f MiB of weights per token), %s KV (%.1f KiB per token), SIMD %s, panels %s, attention %s\n"
                "%8s %10s %14s %10s %14s %16s %12s\n",
                mc.name.c_str(), model->weights.weight_bytes() / 1048576.0, kv_type_name(kv_type), token_bytes / 1024.0,
                quant_simd_name(), std::string(panel_kernel_name(default_panel_kernel())).c_str(),
                std::string(cpu::default_attention_kernel().name).c_str(), "threads", "prompt", "prompt tok/s", "decode",
                "decode tok/s", "decode MiB/token", "floor tok/s");
  for (int threads : thread_list) {
    // The decode floor: a step must read the weights and the context's KV at least once.
    const double bandwidth = measure_read_bandwidth(threads);
    if (!json) std::printf("%d threads: memory read bandwidth %.1f GB/s\n", threads, bandwidth / 1e9);
    CpuBackend backend(model->weights, threads, kv_type);
    for (int prompt_tokens : prompt_list) {
    const std::vector<int32_t> prompt = bench_prompt(*model, prompt_tokens);
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
    // What one decode step reads at least: the weights once, and the KV of the context at the
    // middle of the decode.
    const double step_bytes = model->weights.weight_bytes() + static_cast<double>(token_bytes) * (prompt_tokens + decode_tokens / 2);
    if (json)
      std::printf(
          "{\"engine\":\"pagedchat\",\"threads\":%d,\"prompt_tokens\":%d,\"prompt_tok_s\":%.2f,"
          "\"decode_tokens\":%d,\"decode_tok_s\":%.2f,\"kv_type\":\"%s\",\"decode_bytes_per_token\":%.0f,"
          "\"read_bandwidth\":%.0f,\"decode_floor_tok_s\":%.2f}\n",
          threads, prompt_tokens, p, decode_tokens, d, kv_type_name(kv_type), step_bytes, bandwidth, bandwidth / step_bytes);
    else
      std::printf("%8d %10d %14.1f %10d %14.1f %16.1f %12.1f (%.0f%%)\n", threads, prompt_tokens, p, decode_tokens, d,
                  step_bytes / 1048576.0, bandwidth / step_bytes, 100.0 * d / (bandwidth / step_bytes));
    std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace pagedchat::cli
