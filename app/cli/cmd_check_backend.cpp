// `check backend`: the CUDA backend against the CPU backend on the same model (by default the
// random-weight "tiny" shape), several prompts batched together: one prefill step, then --steps
// decode steps in which both are fed the CPU's greedy token (teacher forcing, so one divergence
// does not hide the steps after it). Per prompt: the largest logit error relative to the row's
// largest |logit|, how often the top-1 tokens agree, and the first step where they do not, i.e.
// where the two backends' greedy outputs would part. A top-1 disagreement is a near-tie (and
// forgiven) when the CPU's top two logits are closer than twice that row's largest error; any
// other, or an error over --tolerance, fails the check (exit 1). CUDA builds only.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>

#include "app/cli/backend_choice.h"
#include "app/cli/cli_args.h"
#include "app/cli/commands.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/common/error.h"
#include "engine/model/random_model.h"

#include "runtime/gpu_tools.h"

namespace pagedchat::cli {
namespace {

struct RowCompare {
  double rel_error = 0;  // max |gpu - cpu| / max |cpu|
  bool top1_equal = false;
  bool near_tie = false;  // the CPU's top two are closer than twice the largest error
};

RowCompare compare_row(const float* gpu, const float* cpu, int32_t vocab) {
  double max_diff = 0, max_abs = 0;
  int32_t best = 0, second = -1, gpu_best = 0;
  for (int32_t i = 0; i < vocab; ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::fabs(gpu[i] - cpu[i])));
    max_abs = std::max(max_abs, static_cast<double>(std::fabs(cpu[i])));
    if (gpu[i] > gpu[gpu_best]) gpu_best = i;
    if (cpu[i] > cpu[best]) {
      second = best;
      best = i;
    } else if (i != best && (second < 0 || cpu[i] > cpu[second])) {
      second = i;
    }
  }
  RowCompare r;
  r.rel_error = max_abs > 0 ? max_diff / max_abs : max_diff;
  r.top1_equal = gpu_best == best;
  r.near_tie = second >= 0 && cpu[best] - cpu[second] <= 2 * max_diff;
  return r;
}

int32_t argmax(const float* row, int32_t vocab) { return static_cast<int32_t>(std::max_element(row, row + vocab) - row); }

struct PromptStats {
  int32_t prompt_len = 0;
  double max_rel_error = 0;
  int steps = 0, top1_equal = 0, near_ties = 0, mismatches = 0;
  int first_divergence = -1;  // step index, -1: none
};

}  // namespace

int cmd_check_backend(const std::vector<std::string>& argv) {
  Args args(argv, with_backend_options({"prompts", "steps", "seed", "block-size", "tolerance", "threads"}), {});
  if (!gpu_tools_built()) {
    std::fprintf(stderr, "pagedchat-cli: check backend: built without CUDA\n");
    return 1;
  }
  if (args.get("backend")) fail("check backend always compares --backend cuda with cpu; drop --backend");
  std::unique_ptr<Model> model =
      args.get("model") || args.get("random-weights") ? load_model(args) : make_random_model("tiny", args.get_u64("weights-seed", 1));
  const ModelConfig& c = model->config();
  const int num_prompts = args.get_int("prompts", 4, 1, 64);
  const int steps = args.get_int("steps", 64, 0, 4096);
  const int block_size = args.get_block_size();
  const std::string dtype = args.get_or("dtype", "bf16");
  // bf16 keeps 8 mantissa bits of every GEMM input, f16 11: errors ~8x apart.
  const double tolerance = args.get_double("tolerance", dtype == "f16" ? 1e-2 : 5e-2, 0.0, 10.0);
  std::mt19937_64 rng(args.get_u64("seed", 1));

  // Prompts of mixed lengths (a few blocks to a few hundred tokens) of random token ids.
  std::vector<std::vector<int32_t>> seqs(num_prompts);
  std::uniform_int_distribution<int32_t> token(0, c.vocab_size - 1);
  int32_t total_prompt = 0, max_len = 0;
  for (int s = 0; s < num_prompts; ++s) {
    const int32_t len = std::array<int32_t, 4>{7, 33, 100, 250}[s % 4] + s / 4;
    for (int32_t i = 0; i < len; ++i) seqs[s].push_back(token(rng));
    total_prompt += len;
    max_len = std::max(max_len, len);
  }
  // Block tables over a shuffled pool, so that no sequence's blocks are in order.
  const int32_t per_seq = (max_len + steps + block_size - 1) / block_size;
  std::vector<int32_t> ids(static_cast<size_t>(per_seq) * num_prompts);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  std::vector<std::vector<int32_t>> tables(num_prompts);
  for (int s = 0; s < num_prompts; ++s) tables[s].assign(ids.begin() + s * per_seq, ids.begin() + (s + 1) * per_seq);

  CpuBackend cpu(model->weights, args.get_int("threads", 0, 0, 1024), KvType::F32, cpu::MatmulPrecision::kFloatActivations);
  BuiltBackend gpu_choice = [&] {
    std::vector<std::string> a = {"--backend", "cuda", "--dtype", dtype};
    return make_backend(Args(a, with_backend_options({}), {}), *model, 1, total_prompt, block_size);
  }();
  Backend& gpu = *gpu_choice.backend;
  const KvCacheShape shape{c.num_layers, c.num_kv_heads, c.head_dim, static_cast<int>(ids.size()), block_size};
  cpu.allocate_kv(shape);
  gpu.allocate_kv(shape);
  std::printf("check backend: %s vs cpu (f32 activations), model %s, %d prompts, %d decode steps, tolerance %.0e\n",
              gpu_choice.description.c_str(), c.name.c_str(), num_prompts, steps, tolerance);

  std::vector<PromptStats> stats(num_prompts);
  std::vector<float> cpu_logits, gpu_logits;
  for (int step = 0; step <= steps; ++step) {
    ForwardBatch batch;
    for (int s = 0; s < num_prompts; ++s) {
      const int32_t len = static_cast<int32_t>(seqs[s].size());
      const int32_t start = step == 0 ? 0 : len - 1;  // the prompt whole, then one new token
      batch.add_sequence(seqs[s].data() + start, len - start, start, tables[s], block_size, true);
    }
    cpu.forward(batch, cpu_logits);
    gpu.forward(batch, gpu_logits);
    for (int s = 0; s < num_prompts; ++s) {
      const float* a = gpu_logits.data() + static_cast<size_t>(s) * c.vocab_size;
      const float* b = cpu_logits.data() + static_cast<size_t>(s) * c.vocab_size;
      const RowCompare r = compare_row(a, b, c.vocab_size);
      PromptStats& st = stats[s];
      st.prompt_len = step == 0 ? static_cast<int32_t>(seqs[s].size()) : st.prompt_len;
      st.max_rel_error = std::max(st.max_rel_error, r.rel_error);
      ++st.steps;
      st.top1_equal += r.top1_equal;
      if (!r.top1_equal) {
        if (st.first_divergence < 0) st.first_divergence = step;
        (r.near_tie ? st.near_ties : st.mismatches) += 1;
      }
      seqs[s].push_back(argmax(b, c.vocab_size));  // the CPU's greedy token, for both
    }
  }

  std::printf("%6s %6s %6s %12s %10s %9s %10s %11s %5s\n", "prompt", "tokens", "steps", "max rel err", "top-1 eq",
              "near-tie", "mismatch", "first diff", "ok");
  bool ok = true;
  for (int s = 0; s < num_prompts; ++s) {
    const PromptStats& st = stats[s];
    const bool pass = st.max_rel_error <= tolerance && st.mismatches == 0;
    ok = ok && pass;
    std::printf("%6d %6d %6d %12.2e %10d %9d %10d %11s %5s\n", s, st.prompt_len, st.steps, st.max_rel_error, st.top1_equal,
                st.near_ties, st.mismatches, st.first_divergence < 0 ? "none" : std::to_string(st.first_divergence).c_str(),
                pass ? "yes" : "NO");
  }
  std::printf("check backend: %s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

}  // namespace pagedchat::cli
