// `bench attention`: CPU paged attention alone, no model. A pool of --layers layers holds one
// sequence of --context tokens (random K/V, shuffled blocks); a decode step is one query token
// attending to all of them in every layer, as the forward pass does, so the KV read per step is
// the pool's size (far past the caches at long context). Reports ms per step and the KV bytes
// read per second, for each kernel this CPU has; and a prefill chunk's GFLOP/s.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "app/cli/cli_args.h"
#include "app/cli/commands.h"
#include "engine/backend/cpu/attention/paged_attention.h"
#include "engine/common/error.h"

namespace pagedchat::cli {
using cpu::AttentionKernel;
using cpu::AttentionShape;
using cpu::KvPool;
using cpu::attention_kernels;
using cpu::kMaxHeadDim;
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int cmd_bench_attention(const std::vector<std::string>& argv) {
  Args args(argv, {"context", "kv-type", "threads", "layers", "heads", "kv-heads", "head-dim", "chunk", "steps", "kernel"}, {"in-order"});
  const int ctx = args.get_int("context", 4000, 1, 1 << 20);
  const KvType type = parse_kv_type(args.get_or("kv-type", "f16"));
  const int threads = args.get_int("threads", 0, 0, 1024);
  const int layers = args.get_int("layers", 30, 1, 1024);
  const AttentionShape shape{args.get_int("heads", 9, 1, 1024), args.get_int("kv-heads", 3, 1, 1024),
                             args.get_int("head-dim", 64, 1, kMaxHeadDim)};
  const int chunk = args.get_int("chunk", 512, 1, 1 << 16);
  const int steps = args.get_int("steps", 20, 1, 100000);
  if (shape.num_heads % shape.num_kv_heads) fail("--heads must be a multiple of --kv-heads");
  const int block_size = 16;
  const int num_blocks = (ctx + block_size - 1) / block_size;

  KvPool kv;
  kv.allocate({layers, shape.num_kv_heads, shape.head_dim, num_blocks, block_size}, type);
  std::vector<int32_t> table(num_blocks);
  std::iota(table.begin(), table.end(), 0);
  std::mt19937 rng(1);
  if (!args.flag("in-order")) std::shuffle(table.begin(), table.end(), rng);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> k(shape.head_dim), v(shape.head_dim);
  for (int l = 0; l < layers; ++l)
    for (int pos = 0; pos < ctx; ++pos)
      for (int h = 0; h < shape.num_kv_heads; ++h) {
        for (int d = 0; d < shape.head_dim; ++d) k[d] = u(rng), v[d] = u(rng);
        kv.store(l, static_cast<int64_t>(table[pos / block_size]) * block_size + pos % block_size, h, k.data(), v.data());
      }
  ThreadPool pool(threads);
  const double kv_bytes = 2.0 * layers * ctx * shape.num_kv_heads * kv.row_bytes();
  std::printf("context %d, %s KV, %d layers, %d heads / %d KV heads of %d, %d threads: %.1f MiB of KV a step\n", ctx,
              kv_type_name(type), layers, shape.num_heads, shape.num_kv_heads, shape.head_dim, pool.num_threads(),
              kv_bytes / 1048576.0);
  std::printf("%-8s %14s %12s %22s\n", "kernel", "decode ms", "KV GB/s", "prefill chunk GFLOP/s");
  const int q_row = shape.num_heads * shape.head_dim;
  const std::string only = args.get_or("kernel", "");
  for (const AttentionKernel* kernel : attention_kernels()) {
    if (!only.empty() && kernel->name != only) continue;
    // Decode: one token at the last position, every layer.
    ForwardBatch one;
    int32_t token = 1;
    one.add_sequence(&token, 1, ctx - 1, table, block_size, false);
    std::vector<float> q(q_row), out(q_row);
    for (float& x : q) x = u(rng);
    for (int l = 0; l < layers; ++l) paged_attention(one, kv, l, shape, q.data(), out.data(), pool, *kernel);  // warm
    auto t0 = std::chrono::steady_clock::now();
    for (int s = 0; s < steps; ++s)
      for (int l = 0; l < layers; ++l) paged_attention(one, kv, l, shape, q.data(), out.data(), pool, *kernel);
    const double decode = seconds_since(t0) / steps;
    // Prefill: the context's last `chunk` tokens as one chunk, in one layer.
    const int n = std::min(chunk, ctx);
    ForwardBatch batch;
    std::vector<int32_t> tokens(n, 1);
    batch.add_sequence(tokens.data(), n, ctx - n, table, block_size, false);
    std::vector<float> qs(static_cast<size_t>(n) * q_row), outs(qs.size());
    for (float& x : qs) x = u(rng);
    double prefill = 1e30;  // the best of a few: one chunk is short enough to be hit by noise
    for (int rep = 0; rep < 5; ++rep) {
      t0 = std::chrono::steady_clock::now();
      paged_attention(batch, kv, rep % layers, shape, qs.data(), outs.data(), pool, *kernel);
      prefill = std::min(prefill, seconds_since(t0));
    }
    double pairs = 0;  // (query, key) pairs: each query attends to its position + 1 keys
    for (int i = 0; i < n; ++i) pairs += ctx - n + i + 1;
    const double flops = pairs * shape.num_heads * shape.head_dim * 4.0;  // QK and PV, a multiply and an add each
    std::printf("%-8s %14.3f %12.2f %22.1f\n", std::string(kernel->name).c_str(), decode * 1e3, kv_bytes / decode / 1e9,
                flops / prefill / 1e9);
  }
  return 0;
}

}  // namespace pagedchat::cli
