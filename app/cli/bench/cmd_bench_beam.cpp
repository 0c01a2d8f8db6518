// `bench beam`: KV blocks held by beam search against the same number of sequences that share
// less. For each width W, one chat prompt: the peak of blocks in use during a beam search of W
// beams; during n = W parallel samples (temperature 1: they share the prompt's blocks only); and
// what W independent sequences of the beams' final lengths hold, counted (nothing shared).

#include <algorithm>
#include <cstdio>

#include "app/cli/cli_args.h"
#include "app/cli/commands.h"
#include "app/cli/model_argument.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/chat/chat_model.h"
#include "engine/common/error.h"
#include "engine/engine/request_runner.h"

namespace pagedchat::cli {
namespace {

struct Run {
  int32_t peak_blocks = 0;
  std::vector<size_t> lengths;  // generated tokens of each output
};

Run run(const Model& model, Backend& backend, const EngineConfig& config, Request request) {
  Engine engine(model, backend, config);
  RequestRunner runner(engine);
  Run r;
  const RequestOutput out = runner.run_all(std::move(request), [&] {
    r.peak_blocks = std::max(r.peak_blocks, engine.stats().kv.num_used_blocks);
  });
  if (!out.ok()) fail("%s", out.error.c_str());
  for (const SampleOutput& s : out.samples) r.lengths.push_back(s.tokens.size());
  return r;
}

}  // namespace

int cmd_bench_beam(const std::vector<std::string>& argv) {
  Args args(argv, {"model", "threads", "widths", "max-tokens", "block-size"}, {"json"});
  auto model = Model::load(resolve_model_path(args.get_or("model", "")));
  const std::vector<int> widths = args.get_int_list("widths", "4,8", 32);
  const int max_tokens = args.get_int("max-tokens", 64, 1, 4096);
  const int block_size = args.get_block_size();
  CpuBackend backend(model->weights, args.get_int("threads", 0, 0, 1024));
  const ChatModel chat(*model, ChatModel::own_template(*model));
  const std::vector<int32_t> prompt = chat.encode_chat({{"user", "Write a short paragraph about the history of tea."}});
  EngineConfig config;
  config.block_size = block_size;
  const bool json = args.flag("json");
  auto blocks_for = [&](size_t tokens) { return static_cast<int64_t>((tokens + block_size - 1) / block_size); };
  if (!json)
    std::printf("prompt %zu tokens, up to %d generated, blocks of %d tokens\n%6s %12s %14s %16s %12s\n", prompt.size(),
                max_tokens, block_size, "width", "beam peak", "samples peak", "independent", "beam saves");
  std::string out = "{\"bench\":\"beam\",\"prompt_tokens\":" + std::to_string(prompt.size()) + ",\"rows\":[";
  for (size_t i = 0; i < widths.size(); ++i) {
    const int w = widths[i];
    config.num_blocks = w * static_cast<int32_t>(blocks_for(prompt.size() + max_tokens + 1));
    Request beam;
    beam.prompt = prompt;
    beam.params.max_tokens = max_tokens;
    beam.beam_width = w;
    beam.n = w;
    const Run b = run(*model, backend, config, beam);
    Request samples = beam;
    samples.beam_width = 0;
    samples.params.temperature = 1.0f;
    samples.params.seed = 1;
    const Run s = run(*model, backend, config, samples);
    int64_t independent = 0;
    for (size_t len : b.lengths) independent += blocks_for(prompt.size() + len);
    independent += (w - static_cast<int64_t>(b.lengths.size())) * blocks_for(prompt.size() + max_tokens);
    const double saved = 1.0 - static_cast<double>(b.peak_blocks) / static_cast<double>(independent);
    if (!json)
      std::printf("%6d %12d %14d %16lld %11.0f%%\n", w, b.peak_blocks, s.peak_blocks, static_cast<long long>(independent),
                  100.0 * saved);
    char row[200];
    std::snprintf(row, sizeof row, "%s{\"width\":%d,\"beam_peak_blocks\":%d,\"samples_peak_blocks\":%d,\"independent_blocks\":%lld}",
                  i ? "," : "", w, b.peak_blocks, s.peak_blocks, static_cast<long long>(independent));
    out += row;
  }
  out += "]}";
  if (json) std::printf("%s\n", out.c_str());
  return 0;
}

}  // namespace pagedchat::cli
