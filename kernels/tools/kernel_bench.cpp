// `pagedchat-cli bench kernels`: decode attention at batch 1/16/64/256 x context 512/2k/8k, bf16
// KV, a Llama-3-8B-like layer (32 query heads, 8 kv heads, head_dim 128, block size 16, random
// block tables): time per call and achieved bandwidth (KV bytes read + q read + out written),
// against the device-to-device copy bandwidth measured here (read plus write). The issue's
// bar: batch 64 x 2k reaches 70% of the copy. Then prefill attention TFLOP/s at a 2k chunk.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/device/decode_attention.h"
#include "kernels/host/device_buffer.h"
#include "kernels/tools/kernel_tools.h"
#include "kernels/device/prefill_attention.h"

namespace pagedchat::kernels {
namespace {

constexpr int kHeads = 32, kKvHeads = 8, kHeadDim = 128, kBlockSize = 16;

// Mean milliseconds of fn over `iters` calls after `warmup`, timed with events on stream 0.
template <typename Fn>
double time_ms(Fn&& fn, int warmup, int iters) {
  for (int i = 0; i < warmup; ++i) fn();
  cudaEvent_t start, stop;
  PC_CUDA_CHECK(cudaEventCreate(&start));
  PC_CUDA_CHECK(cudaEventCreate(&stop));
  PC_CUDA_CHECK(cudaEventRecord(start));
  for (int i = 0; i < iters; ++i) fn();
  PC_CUDA_CHECK(cudaEventRecord(stop));
  PC_CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  PC_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  (void)cudaEventDestroy(start);
  (void)cudaEventDestroy(stop);
  return ms / iters;
}

// GB/s of a 1 GiB device-to-device copy, counting read plus write.
double copy_bandwidth() {
  const size_t bytes = size_t(1) << 30;
  DeviceBuffer a(bytes), b(bytes);
  PC_CUDA_CHECK(cudaMemset(a.get(), 1, bytes));
  const double ms = time_ms([&] { PC_CUDA_CHECK(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice)); }, 2, 10);
  return 2.0 * bytes / (ms * 1e-3) / 1e9;
}

// One layer's pool with every sequence at `ctx` tokens, tables shuffled over the pool.
struct Setup {
  DeviceBuffer k, v, tables, lens, cu, q, out;
  PagedKvView<const uint16_t> view;
  AttentionRows rows;
};

Setup make_setup(std::mt19937& rng, int batch, int ctx, int q_per_seq) {
  Setup s;
  const int per_seq = (ctx + kBlockSize - 1) / kBlockSize;
  const int num_blocks = batch * per_seq;
  std::vector<int32_t> tables(static_cast<size_t>(num_blocks));
  std::iota(tables.begin(), tables.end(), 0);
  std::shuffle(tables.begin(), tables.end(), rng);
  const size_t pool_bytes = static_cast<size_t>(num_blocks) * kKvHeads * kBlockSize * kHeadDim * 2;
  s.k = DeviceBuffer(pool_bytes);
  s.v = DeviceBuffer(pool_bytes);
  PC_CUDA_CHECK(cudaMemset(s.k.get(), 0x3c, pool_bytes));  // bf16 0x3c3c ~ 0.0115: finite, not zero
  PC_CUDA_CHECK(cudaMemset(s.v.get(), 0x3c, pool_bytes));
  s.tables = DeviceBuffer(tables.size() * 4);
  s.tables.upload(tables.data(), s.tables.bytes());
  std::vector<int32_t> lens(batch, ctx), cu(batch + 1);
  for (int i = 0; i <= batch; ++i) cu[i] = i * q_per_seq;
  s.lens = DeviceBuffer(lens.size() * 4);
  s.lens.upload(lens.data(), s.lens.bytes());
  s.cu = DeviceBuffer(cu.size() * 4);
  s.cu.upload(cu.data(), s.cu.bytes());
  const size_t q_bytes = static_cast<size_t>(batch) * q_per_seq * kHeads * kHeadDim * 4;
  s.q = DeviceBuffer(q_bytes);
  s.out = DeviceBuffer(q_bytes);
  PC_CUDA_CHECK(cudaMemset(s.q.get(), 0x3c, q_bytes));
  s.view = hnd_view<const uint16_t>(num_blocks, kKvHeads, kBlockSize, kHeadDim);
  s.view.k = s.k.get<uint16_t>();
  s.view.v = s.v.get<uint16_t>();
  s.view.block_tables = s.tables.get<int32_t>();
  s.view.block_table_stride = per_seq;
  s.rows = AttentionRows{s.q.get<float>(), s.out.get<float>(), s.cu.get<int32_t>(), s.lens.get<int32_t>(), batch, kHeads,
                         1.0f / std::sqrt(static_cast<float>(kHeadDim)), q_per_seq, ctx};
  return s;
}

}  // namespace

double device_copy_gbs() { return copy_bandwidth(); }

int run_kernel_bench() {
  int device = 0, num_sms = 0;
  PC_CUDA_CHECK(cudaGetDevice(&device));
  PC_CUDA_CHECK(cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, device));
  cudaDeviceProp prop{};
  PC_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  const double copy_gbs = copy_bandwidth();
  std::printf("bench kernels on %s (%d SMs): device copy %.0f GB/s (read + write)\n", prop.name, num_sms, copy_gbs);
  std::printf("decode attention, bf16 KV, %d heads / %d kv heads, head_dim %d, block %d\n", kHeads, kKvHeads, kHeadDim, kBlockSize);
  std::printf("%6s %6s %7s %10s %9s %8s\n", "batch", "ctx", "splits", "us", "GB/s", "of copy");
  std::mt19937 rng(1);
  double bar_ratio = 0.0;
  for (int batch : {1, 16, 64, 256})
    for (int ctx : {512, 2048, 8192}) {
      Setup s = make_setup(rng, batch, ctx, 1);
      const DecodePlan plan = plan_decode(batch, kHeads, kKvHeads, kHeadDim, ctx, num_sms);
      DeviceBuffer workspace(static_cast<size_t>(plan.workspace_bytes));
      const double ms = time_ms([&] { decode_attention(s.view, KvDtype::BF16, s.rows, plan, workspace.get(), nullptr); }, 3, 20);
      const double bytes = 2.0 * batch * ctx * kKvHeads * kHeadDim * 2 + 2.0 * batch * kHeads * kHeadDim * 4;
      const double gbs = bytes / (ms * 1e-3) / 1e9;
      std::printf("%6d %6d %7d %10.1f %9.0f %7.0f%%\n", batch, ctx, plan.num_splits, ms * 1e3, gbs, 100.0 * gbs / copy_gbs);
      if (batch == 64 && ctx == 2048) bar_ratio = gbs / copy_gbs;
    }
  std::printf("bar (batch 64 x 2k >= 70%% of copy): %s (%.0f%%)\n", bar_ratio >= 0.7 ? "met" : "NOT met", 100.0 * bar_ratio);

  // Prefill: one 2k-token chunk on an empty context, causal: 2 * 2 * heads * head_dim * L^2 / 2 flops.
  const int chunk = 2048;
  Setup s = make_setup(rng, 1, chunk, chunk);
  const double ms = time_ms([&] { prefill_attention(s.view, KvDtype::BF16, s.rows, nullptr); }, 2, 10);
  const double flops = 2.0 * kHeads * kHeadDim * static_cast<double>(chunk) * chunk;
  std::printf("prefill attention, 2k chunk, bf16: %.2f ms, %.1f TFLOP/s (SIMT kernel, no tensor cores)\n", ms, flops / (ms * 1e-3) / 1e12);
  return 0;
}

}  // namespace pagedchat::kernels
