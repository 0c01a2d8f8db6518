#include "engine/bench/roofline.h"

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/common/error.h"
#include "engine/common/thread_pool.h"

namespace pagedchat {

double RooflineCeilings::attainable(double intensity) const {
  return std::min(peak_flops, intensity * read_bandwidth);
}

double measure_read_bandwidth(int threads, size_t bytes, int passes) {
  const size_t n = std::max<size_t>(bytes / sizeof(uint64_t), 1);
  std::vector<uint64_t> buf(n, 1);
  ThreadPool pool(threads);
  std::vector<uint64_t> sums(pool.num_threads());
  double best = 0.0;
  for (int pass = 0; pass < passes; ++pass) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(pool.num_threads(), [&](int64_t t) {
      const size_t begin = n * t / pool.num_threads(), end = n * (t + 1) / pool.num_threads();
      uint64_t s = 0;
      for (size_t i = begin; i < end; ++i) s += buf[i];
      sums[t] = s;
    });
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, n * sizeof(uint64_t) / seconds);
  }
  for (uint64_t s : sums)
    if (s == 0) fail("the bandwidth probe read nothing");  // keeps the sums alive
  return best;
}

std::vector<StepRecord> measure_steps(const Model& model, Backend& backend, int prompt_tokens, int batch, int decode_steps) {
  EngineConfig ec;
  ec.block_size = 16;
  ec.max_context = prompt_tokens + decode_steps + 1;
  ec.num_blocks = batch * ((ec.max_context + ec.block_size - 1) / ec.block_size);
  ec.max_batched_tokens = prompt_tokens * batch;
  ec.max_num_seqs = batch;
  Engine engine(model, backend, ec);
  const int vocab = model.config().vocab_size;
  for (int b = 0; b < batch; ++b) {
    Request r;
    // Distinct prompts, so that no sequence finds another's blocks in the prefix cache.
    for (int i = 0; i < prompt_tokens; ++i) r.prompt.push_back(static_cast<int32_t>((1 + 7919LL * (i + 1) * (b + 1)) % vocab));
    r.params.max_tokens = decode_steps + 1;
    r.params.ignore_eos = true;
    engine.submit(std::move(r));
  }
  std::vector<StepRecord> steps;
  for (bool more = true; more;) {
    more = engine.step();
    if (!engine.last_step().chunks.empty()) steps.push_back(engine.last_step());
  }
  return steps;
}

RooflineCeilings measure_cpu_roofline(const Model& model, CpuBackend& backend) {
  RooflineCeilings out;
  out.threads = backend.num_threads();
  out.read_bandwidth = measure_read_bandwidth(out.threads, size_t{256} << 20, 3);
  // The best of a few prompt sizes: past ~64 tokens the weights are amortised, and past ~256 the
  // attention's share (and the activations' cache misses) start to pull the rate back down.
  for (int pass = 0; pass < 2; ++pass)
    for (int tokens : {64, 128, 256})
      for (const StepRecord& s : measure_steps(model, backend, tokens, 1, 0))
        if (s.forward_seconds > 0) out.peak_flops = std::max(out.peak_flops, s.cost.flops / s.forward_seconds);
  return out;
}

}  // namespace pagedchat
