// `bench roofline`: this machine's roofline for a model, and where the engine's steps sit on it.
// The ceilings: the memory read bandwidth, and the best FLOP/s of the engine's own prompt steps
// of 64-256 tokens (engine/bench/roofline.h). Then a sweep: prompt steps of 1 to 512 tokens and decode
// steps of 1 to 16 sequences, each with its FLOP and bytes as the model's shapes count them
// (engine/engine/step_cost.h), its arithmetic intensity, the FLOP/s it reached, and what the
// roofline allows at that intensity. Each figure is the median of --repeats runs.

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "app/cli/cli_args.h"
#include "app/cli/commands.h"
#include "app/cli/model_argument.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/bench/roofline.h"
#include "engine/model/model.h"

namespace pagedchat::cli {
namespace {

struct Row {
  double seconds = 0, flops = 0, bytes = 0;
};

// The median (by time) of the steps `pick` selects over `repeats` runs of measure_steps.
template <typename Pick>
Row median_step(const Model& model, CpuBackend& backend, int prompt, int batch, int decode, int repeats, Pick pick) {
  std::vector<Row> rows;
  for (int r = 0; r < repeats; ++r)
    for (const StepRecord& s : measure_steps(model, backend, prompt, batch, decode))
      if (pick(s)) rows.push_back({s.forward_seconds, s.cost.flops, s.cost.bytes_read});
  if (rows.empty()) return {};
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.seconds < b.seconds; });
  return rows[rows.size() / 2];
}

void print_row(const char* kind, int tokens, const Row& r, const RooflineCeilings& roof, bool json) {
  const double intensity = r.bytes > 0 ? r.flops / r.bytes : 0, reached = r.seconds > 0 ? r.flops / r.seconds : 0;
  const double allowed = roof.attainable(intensity);
  const char* bound = intensity < roof.ridge() ? "memory" : "compute";
  if (json)
    std::printf("{\"kind\":\"%s\",\"tokens\":%d,\"seconds\":%.6f,\"flops\":%.0f,\"bytes_read\":%.0f,\"intensity\":%.3f,"
                "\"flops_per_s\":%.0f,\"attainable_flops_per_s\":%.0f,\"bound\":\"%s\"}\n",
                kind, tokens, r.seconds, r.flops, r.bytes, intensity, reached, allowed, bound);
  else
    std::printf("%-8s %7d %9.2f %9.2f %10.1f %10.1f %9.1f %11.1f %6.0f%% %s\n", kind, tokens, r.seconds * 1e3, r.flops / 1e9,
                r.bytes / 1048576.0, intensity, reached / 1e9, allowed / 1e9, allowed > 0 ? 100.0 * reached / allowed : 0.0, bound);
}

}  // namespace

int cmd_bench_roofline(const std::vector<std::string>& argv) {
  Args args(argv, {"model", "threads", "kv-type", "repeats", "context"}, {"json"});
  auto model = Model::load(resolve_model_path(args.get_or("model", "")));
  const int threads = args.get_int("threads", 2, 1, 1024);
  const int repeats = args.get_int("repeats", 3, 1, 100);
  const int context = args.get_int("context", 128, 1, 1 << 16);  // the decode steps' context
  const KvType kv_type = parse_kv_type(args.get_or("kv-type", "f16"));
  const bool json = args.flag("json");

  CpuBackend backend(model->weights, threads, kv_type);  // packed once: the ceilings and the sweep
  const RooflineCeilings roof = measure_cpu_roofline(*model, backend);
  if (json)
    std::printf("{\"model\":\"%s\",\"threads\":%d,\"peak_flops_per_s\":%.0f,\"read_bandwidth\":%.0f,\"ridge\":%.3f}\n",
                model->config().name.c_str(), roof.threads, roof.peak_flops, roof.read_bandwidth, roof.ridge());
  else
    std::printf("model %s, %d threads: compute roof %.1f GFLOP/s (the best prompt step of 64-256 tokens), memory read %.1f GB/s, "
                "ridge %.1f FLOP/byte\n%-8s %7s %9s %9s %10s %10s %9s %11s %7s %s\n",
                model->config().name.c_str(), roof.threads, roof.peak_flops / 1e9, roof.read_bandwidth / 1e9, roof.ridge(),
                "step", "tokens", "ms", "GFLOP", "MiB read", "FLOP/byte", "GFLOP/s", "roof GFLOP/s", "of roof", "bound");
  for (int tokens : {1, 2, 4, 8, 16, 32, 64, 128, 256, 512}) {
    const Row r = median_step(*model, backend, tokens, 1, 0, repeats, [](const StepRecord&) { return true; });
    print_row("prompt", tokens, r, roof, json);
  }
  for (int batch : {1, 2, 4, 8, 16}) {
    const Row r = median_step(*model, backend, context, batch, 8, repeats, [&](const StepRecord& s) {
      return static_cast<int>(s.chunks.size()) == batch &&
             std::all_of(s.chunks.begin(), s.chunks.end(), [](const StepRecord::Chunk& c) { return c.is_decode; });
    });
    print_row("decode", batch, r, roof, json);
  }
  return 0;
}

}  // namespace pagedchat::cli
