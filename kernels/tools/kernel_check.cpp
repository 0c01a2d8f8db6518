// `pagedchat-cli check kernels`: every kernel against its CPU reference on fresh random inputs
// (never zeros), its output poisoned with NaN before each run, over shapes that cover batch
// 1..256, contexts 1..32k, block sizes 8/16/32, GQA ratios 1..16, head dims 64/128/256, f16 and
// bf16, and random non-contiguous block tables. One table row per case: max |gpu - ref| over
// max |ref| (attention), or the count of bytes that differ (KV write, block copy, swap).

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/device/block_copy.h"
#include "kernels/device/decode_attention.h"
#include "kernels/host/device_buffer.h"
#include "kernels/tools/kernel_tools.h"
#include "kernels/device/kv_write.h"
#include "kernels/device/prefill_attention.h"
#include "kernels/reference/attention_reference.h"
#include "kernels/reference/block_copy_reference.h"
#include "kernels/reference/kv_write_reference.h"
#include "kernels/host/swap_blocks.h"

namespace pagedchat::kernels {
namespace {

constexpr double kAttentionTolerance = 1e-4;  // f32 accumulation vs the double reference

struct Shape {
  int num_heads, num_kv_heads, head_dim, block_size;
  KvDtype dtype;
};

std::string shape_name(const Shape& s) {
  return format("h%d/kv%d d%d bs%d %s", s.num_heads, s.num_kv_heads, s.head_dim, s.block_size, kv_dtype_name(s.dtype));
}

// A pool holding random K/V everywhere, and per-sequence block tables drawn at random from it.
struct Problem {
  Shape shape;
  std::vector<int32_t> seq_lens, cu_seqlens_q, tables;
  int32_t table_stride = 0, num_blocks = 0;
  std::vector<uint16_t> k, v;  // host copy of the pool, HND
  std::vector<float> q;        // [num_tokens, num_heads, head_dim]
  int32_t max_q_len = 0, max_seq_len = 0;
  int num_tokens() const { return cu_seqlens_q.back(); }
};

uint16_t random_kv(std::mt19937& rng, KvDtype dt) {
  float x = std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng);
  if (x == 0.0f) x = 0.5f;
  return dt == KvDtype::F16 ? KvF16::store(x) : KvBf16::store(x);
}

// (prefix, q_len) per sequence: q_len tokens at the end of a context of prefix + q_len.
Problem make_problem(std::mt19937& rng, const Shape& s, const std::vector<std::pair<int, int>>& seqs) {
  Problem p;
  p.shape = s;
  p.cu_seqlens_q.push_back(0);
  int total_blocks = 0;
  for (auto [prefix, n] : seqs) {
    p.seq_lens.push_back(prefix + n);
    p.cu_seqlens_q.push_back(p.cu_seqlens_q.back() + n);
    p.max_q_len = std::max(p.max_q_len, n);
    p.max_seq_len = std::max(p.max_seq_len, prefix + n);
    const int nb = (prefix + n + s.block_size - 1) / s.block_size;
    total_blocks += nb;
    p.table_stride = std::max(p.table_stride, nb);
  }
  p.num_blocks = total_blocks + 7;  // spare blocks nobody reads
  std::vector<int32_t> order(p.num_blocks);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  p.tables.assign(static_cast<size_t>(seqs.size()) * p.table_stride, -1);
  size_t next = 0;
  for (size_t i = 0; i < seqs.size(); ++i)
    for (int b = 0; b < (p.seq_lens[i] + s.block_size - 1) / s.block_size; ++b) p.tables[i * p.table_stride + b] = order[next++];
  const size_t elems = static_cast<size_t>(p.num_blocks) * s.num_kv_heads * s.block_size * s.head_dim;
  p.k.resize(elems);
  p.v.resize(elems);
  for (auto& x : p.k) x = random_kv(rng, s.dtype);
  for (auto& x : p.v) x = random_kv(rng, s.dtype);
  p.q.resize(static_cast<size_t>(p.num_tokens()) * s.num_heads * s.head_dim);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (auto& x : p.q) x = u(rng);
  return p;
}

template <typename T>
DeviceBuffer to_device(const std::vector<T>& host) {
  DeviceBuffer d(host.size() * sizeof(T));
  d.upload(host.data(), d.bytes());
  return d;
}

// max |got - want| / max |want|; NaN anywhere (a row the kernel never wrote) gives NaN.
double max_relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  double err = 0.0, scale = 1e-30;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return NAN;
    err = std::max(err, std::fabs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
  }
  return err / scale;
}

struct Report {
  int failures = 0;
  void row(const char* kernel, const std::string& shape, const std::string& what, double error, bool ok) {
    std::printf("%-10s %-34s %-26s %10.2e  %s\n", kernel, shape.c_str(), what.c_str(), error, ok ? "ok" : "FAIL");
    if (!ok) ++failures;
  }
};

// Decode or prefill on one problem: the kernel's output vs the reference's.
void check_attention(Report& report, const Problem& p, bool decode, int num_sms, const char* label) {
  const Shape& s = p.shape;
  DeviceBuffer k = to_device(p.k), v = to_device(p.v), q = to_device(p.q), tables = to_device(p.tables);
  DeviceBuffer lens = to_device(p.seq_lens), cu = to_device(p.cu_seqlens_q);
  DeviceBuffer out(p.q.size() * sizeof(float));
  out.poison();
  PagedKvView<const uint16_t> view = hnd_view<const uint16_t>(p.num_blocks, s.num_kv_heads, s.block_size, s.head_dim);
  view.k = k.get<uint16_t>();
  view.v = v.get<uint16_t>();
  view.block_tables = tables.get<int32_t>();
  view.block_table_stride = p.table_stride;
  AttentionRows rows{q.get<float>(), out.get<float>(), cu.get<int32_t>(), lens.get<int32_t>(),
                     static_cast<int32_t>(p.seq_lens.size()), s.num_heads, 1.0f / std::sqrt(static_cast<float>(s.head_dim)),
                     p.max_q_len, p.max_seq_len};
  std::string what;
  if (decode) {
    const DecodePlan plan = plan_decode(rows.num_seqs, s.num_heads, s.num_kv_heads, s.head_dim, p.max_seq_len, num_sms);
    DeviceBuffer workspace(static_cast<size_t>(plan.workspace_bytes));
    workspace.poison();
    decode_attention(view, s.dtype, rows, plan, workspace.get(), nullptr);
    what = format("b%d ctx<=%d %s split%d", rows.num_seqs, p.max_seq_len, label, plan.num_splits);
    PC_CUDA_CHECK(cudaDeviceSynchronize());
  } else {
    prefill_attention(view, s.dtype, rows, nullptr);
    what = format("b%d q<=%d ctx<=%d", rows.num_seqs, p.max_q_len, p.max_seq_len);
    PC_CUDA_CHECK(cudaDeviceSynchronize());
  }
  std::vector<float> got(p.q.size()), want(p.q.size());
  out.download(got.data(), out.bytes());

  PagedKvView<const uint16_t> host_view = view;
  host_view.k = p.k.data();
  host_view.v = p.v.data();
  host_view.block_tables = p.tables.data();
  AttentionRows host_rows = rows;
  host_rows.q = p.q.data();
  host_rows.out = want.data();
  host_rows.cu_seqlens_q = p.cu_seqlens_q.data();
  host_rows.seq_lens = p.seq_lens.data();
  attention_reference(host_view, s.dtype, host_rows);
  const double err = max_relative_error(got, want);
  report.row(decode ? "decode" : "prefill", shape_name(s), what, err, err <= kAttentionTolerance);
}

std::vector<std::pair<int, int>> decode_seqs(std::mt19937& rng, int batch, int max_ctx) {
  std::vector<std::pair<int, int>> seqs;
  for (int i = 0; i < batch; ++i) seqs.push_back({static_cast<int>(rng() % max_ctx), 1});  // contexts 1..max_ctx
  seqs[0].first = max_ctx - 1;                                                              // the longest present
  return seqs;
}

void check_kv_write(Report& report, std::mt19937& rng, const Shape& s, int num_tokens) {
  const int num_blocks = num_tokens / s.block_size + 9;
  PagedKvView<uint16_t> view = hnd_view<uint16_t>(num_blocks, s.num_kv_heads, s.block_size, s.head_dim);
  std::vector<int64_t> slots(static_cast<size_t>(num_blocks) * s.block_size);
  std::iota(slots.begin(), slots.end(), 0);
  std::shuffle(slots.begin(), slots.end(), rng);
  slots.resize(num_tokens);
  for (int t = 0; t < num_tokens; t += 7) slots[t] = -1;  // padding tokens
  std::vector<float> k(static_cast<size_t>(num_tokens) * s.num_kv_heads * s.head_dim), v(k.size());
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  for (auto& x : k) x = u(rng);
  for (auto& x : v) x = u(rng);
  DeviceBuffer dk(view.pool_elements() * 2), dv(view.pool_elements() * 2), dkr = to_device(k), dvr = to_device(v), ds = to_device(slots);
  dk.poison();
  dv.poison();
  PagedKvView<uint16_t> dev = view;
  dev.k = dk.get<uint16_t>();
  dev.v = dv.get<uint16_t>();
  kv_write(dev, s.dtype, {dkr.get<float>(), dvr.get<float>(), ds.get<int64_t>(), num_tokens}, nullptr);
  PC_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<uint16_t> got_k(view.pool_elements()), got_v(got_k.size()), want_k(got_k.size(), 0xffff), want_v(got_k.size(), 0xffff);
  dk.download(got_k.data(), dk.bytes());
  dv.download(got_v.data(), dv.bytes());
  view.k = want_k.data();
  view.v = want_v.data();
  kv_write_reference(view, s.dtype, {k.data(), v.data(), slots.data(), num_tokens});
  size_t diff = 0;
  for (size_t i = 0; i < got_k.size(); ++i) diff += (got_k[i] != want_k[i]) + (got_v[i] != want_v[i]);
  report.row("kv_write", shape_name(s), format("%d tokens (differing elements)", num_tokens), static_cast<double>(diff), diff == 0);
}

// Copy-on-write inside one device pool, then swap out to pinned host and back in.
void check_block_moves(Report& report, std::mt19937& rng) {
  const int layers = 3, blocks = 64, host_blocks = 40;
  const int64_t block_bytes = 16 * 8 * 128 * 2;
  std::vector<uint8_t> pool(static_cast<size_t>(2 * layers * blocks * block_bytes));
  for (auto& b : pool) b = static_cast<uint8_t>(rng());
  DeviceBuffer dev = to_device(pool);
  std::vector<int32_t> ids(blocks);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  std::vector<BlockCopy> cow;  // disjoint sources and destinations, as one transfer batch is
  for (int i = 0; i < 20; ++i) cow.push_back({ids[i], ids[20 + i]});
  DeviceBuffer pairs = to_device(cow);
  const KvPoolBytes dpool = packed_kv_pool_bytes(dev.get<uint8_t>(), layers, blocks, block_bytes);
  copy_blocks(dpool, pairs.get<BlockCopy>(), static_cast<int32_t>(cow.size()), nullptr);
  PC_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<uint8_t> want = pool, got(pool.size());
  const KvPoolBytes hwant = packed_kv_pool_bytes(want.data(), layers, blocks, block_bytes);
  copy_blocks_reference(hwant, hwant, cow.data(), cow.size());
  dev.download(got.data(), got.size());
  size_t diff = 0;
  for (size_t i = 0; i < got.size(); ++i) diff += got[i] != want[i];
  report.row("copy", format("%d layers, %lld B blocks", layers, static_cast<long long>(block_bytes)),
             format("%zu pairs (differing bytes)", cow.size()), static_cast<double>(diff), diff == 0);

  // Swap out: runs of consecutive blocks and single ones, to a pinned pool of another size.
  PinnedBuffer host(static_cast<size_t>(2 * layers * host_blocks * block_bytes));
  std::fill_n(host.get<uint8_t>(), host.bytes(), uint8_t(0xa5));
  const KvPoolBytes hpool = packed_kv_pool_bytes(host.get<uint8_t>(), layers, host_blocks, block_bytes);
  std::vector<BlockCopy> out = {{3, 10}, {4, 11}, {5, 12}, {40, 0}, {63, 39}, {7, 20}, {8, 21}};
  std::vector<uint8_t> host_want(host.bytes(), 0xa5);
  const KvPoolBytes hw = packed_kv_pool_bytes(host_want.data(), layers, host_blocks, block_bytes);
  swap_blocks(dpool, hpool, out, nullptr);
  PC_CUDA_CHECK(cudaDeviceSynchronize());
  copy_blocks_reference(hwant, hw, out.data(), out.size());
  diff = 0;
  for (size_t i = 0; i < host_want.size(); ++i) diff += host.get<uint8_t>()[i] != host_want[i];
  report.row("swap_out", "device -> pinned host", format("%zu pairs (differing bytes)", out.size()), static_cast<double>(diff), diff == 0);

  // Swap in to other device blocks.
  std::vector<BlockCopy> in = {{10, 50}, {11, 51}, {12, 52}, {0, 1}, {39, 2}};
  swap_blocks(hpool, dpool, in, nullptr);
  PC_CUDA_CHECK(cudaDeviceSynchronize());
  copy_blocks_reference(hw, hwant, in.data(), in.size());
  dev.download(got.data(), got.size());
  diff = 0;
  for (size_t i = 0; i < got.size(); ++i) diff += got[i] != want[i];
  report.row("swap_in", "pinned host -> device", format("%zu pairs (differing bytes)", in.size()), static_cast<double>(diff), diff == 0);
}

}  // namespace

int run_kernel_check(unsigned seed) {
  int device = 0, num_sms = 0;
  PC_CUDA_CHECK(cudaGetDevice(&device));
  PC_CUDA_CHECK(cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, device));
  cudaDeviceProp prop{};
  PC_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  std::printf("check kernels on %s (%d SMs), seed %u; attention passes at max rel error <= %.0e\n", prop.name, num_sms,
              seed, kAttentionTolerance);
  std::printf("%-10s %-34s %-26s %10s\n", "kernel", "shape", "case", "error");
  std::mt19937 rng(seed);
  Report report;
  const KvDtype bf = KvDtype::BF16, f16 = KvDtype::F16;

  for (const Shape& s : {Shape{32, 8, 128, 16, bf}, Shape{9, 3, 64, 8, f16}, Shape{4, 1, 256, 32, bf}})
    check_kv_write(report, rng, s, 300);

  // Decode: each shape with the device's plan and with the most splits the plan allows.
  struct DecodeCase {
    Shape shape;
    int batch, max_ctx;
  };
  const DecodeCase decode_cases[] = {
      {{32, 8, 128, 16, bf}, 1, 1},      {{32, 8, 128, 16, bf}, 1, 32768}, {{32, 8, 128, 16, f16}, 16, 4096},
      {{8, 8, 64, 8, bf}, 256, 512},     {{14, 2, 64, 8, f16}, 64, 2048},  {{9, 3, 64, 32, bf}, 3, 9000},
      {{4, 1, 256, 16, bf}, 4, 3000},    {{32, 2, 128, 32, bf}, 8, 1500},  {{16, 4, 128, 8, f16}, 256, 300},
  };
  for (const DecodeCase& c : decode_cases) {
    const Problem p = make_problem(rng, c.shape, decode_seqs(rng, c.batch, c.max_ctx));
    check_attention(report, p, true, num_sms, "plan");
    check_attention(report, p, true, 1 << 20, "most");
  }

  // Prefill: chunks over cached prefixes (prefix cache hits, chunked prefill), and whole prompts.
  struct PrefillCase {
    Shape shape;
    std::vector<std::pair<int, int>> seqs;
  };
  const PrefillCase prefill_cases[] = {
      {{32, 8, 128, 16, bf}, {{0, 512}}},
      {{9, 3, 64, 32, f16}, {{100, 64}, {0, 1}, {2000, 300}}},
      {{4, 1, 256, 8, bf}, {{37, 200}, {0, 33}}},
      {{8, 8, 128, 16, bf}, {{16000, 32}}},
      {{32, 2, 128, 8, f16}, {{5, 17}, {300, 128}, {0, 250}, {64, 64}}},
  };
  for (const PrefillCase& c : prefill_cases) check_attention(report, make_problem(rng, c.shape, c.seqs), false, num_sms, "");

  check_block_moves(report, rng);

  std::printf("%s: %d failing\n", report.failures ? "FAIL" : "all kernels match their references", report.failures);
  return report.failures ? 1 : 0;
}

}  // namespace pagedchat::kernels
