// vec_dot_rows throughput per weight type (see quant_bench.h). Timing only: correctness is
// test_quant's job.

#include "engine/bench/quant_bench.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "engine/common/error.h"
#include "engine/common/float16.h"
#include "engine/common/panel_buffer.h"
#include "engine/quant/panel/panel.h"
#include "engine/quant/quant.h"
#include "engine/quant/quant_blocks.h"

namespace pagedchat {
namespace {

using Clock = std::chrono::steady_clock;

// Byte offsets of the fp16 fields of a block. Random bytes there could be NaN, Inf or
// subnormal, and subnormal arithmetic is slow enough on x86 to spoil the timing.
std::vector<size_t> half_field_offsets(GgmlType type) {
  switch (type) {
    case GgmlType::Q4_0: case GgmlType::Q5_0: case GgmlType::Q8_0: return {0};
    case GgmlType::Q4_1: case GgmlType::Q5_1: case GgmlType::Q4_K: case GgmlType::Q5_K: return {0, 2};
    case GgmlType::Q6_K: return {offsetof(block_q6_K, d)};
    case GgmlType::Q3_K: return {offsetof(block_q3_K, d)};
    case GgmlType::Q2_K: return {offsetof(block_q2_K, d), offsetof(block_q2_K, dmin)};
    case GgmlType::IQ4_XS: return {offsetof(block_iq4_xs, d)};
    default: return {};
  }
}

std::vector<uint8_t> random_matrix(GgmlType type, int64_t n, int64_t num_rows) {
  std::mt19937 rng(42);
  std::vector<uint8_t> bytes(ggml_row_size(type, n) * static_cast<size_t>(num_rows));
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  std::normal_distribution<float> normal(0.0f, 0.05f);
  if (type == GgmlType::F32) {
    for (size_t i = 0; i < bytes.size(); i += 4) {
      const float v = normal(rng);
      std::memcpy(&bytes[i], &v, 4);
    }
  } else if (type == GgmlType::F16 || type == GgmlType::BF16) {
    for (size_t i = 0; i < bytes.size(); i += 2) {
      const uint16_t h = type == GgmlType::F16 ? fp32_to_fp16(normal(rng)) : fp32_to_bf16(normal(rng));
      std::memcpy(&bytes[i], &h, 2);
    }
  } else {
    const size_t type_size = ggml_type_traits(type).type_size;
    const uint16_t scale = fp32_to_fp16(0.01f);
    for (size_t b = 0; b < bytes.size(); b += type_size) {
      for (size_t off : half_field_offsets(type)) std::memcpy(&bytes[b + off], &scale, 2);
    }
  }
  return bytes;
}

// Runs body(begin, end) over `threads` contiguous row ranges (cut at multiples of `align`),
// `passes` times each, on fresh threads; returns seconds.
template <typename Body>
double run_split(int64_t num_rows, int threads, int64_t align, int64_t passes, const Body& body) {
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    const int64_t begin = num_rows * t / threads / align * align;
    const int64_t end = t + 1 == threads ? num_rows : num_rows * (t + 1) / threads / align * align;
    pool.emplace_back([&, begin, end] {
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      for (int64_t p = 0; p < passes; ++p) body(begin, end);
    });
  }
  const auto start = Clock::now();
  go.store(true, std::memory_order_release);
  for (auto& th : pool) th.join();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Passes per second of run(passes), timed for at least min_seconds after one warm-up pass.
template <typename Run>
double passes_per_second(double min_seconds, const Run& run) {
  run(1);
  int64_t passes = 1;
  double seconds = run(passes);
  while (seconds < min_seconds) {
    passes = std::max(passes * 2, static_cast<int64_t>(passes * min_seconds / std::max(seconds, 1e-6) * 1.1));
    seconds = run(passes);
  }
  return static_cast<double>(passes) / seconds;
}

std::vector<uint8_t> random_activations(GgmlType type, int64_t n, int64_t num_tokens) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  const size_t row_bytes = activation_row_size(type, n);
  std::vector<uint8_t> act(row_bytes * static_cast<size_t>(num_tokens));
  for (int64_t t = 0; t < num_tokens; ++t) {
    for (auto& v : x) v = normal(rng);
    quantize_activation_row(type, x.data(), act.data() + row_bytes * t, n);
  }
  return act;
}

}  // namespace

double measure_matmul(GgmlType type, int64_t n, int64_t num_rows, int64_t num_tokens, MatmulKernel kernel,
                      int threads, PanelKernel panel_kernel, double min_seconds) {
  const bool panels = kernel != MatmulKernel::kRowMajor;
  threads = std::max(1, threads);
  num_rows = (num_rows + kPanelRows - 1) / kPanelRows * kPanelRows;
  const std::vector<uint8_t> matrix = random_matrix(type, n, num_rows);
  const size_t row_bytes = ggml_row_size(type, n);
  PanelBytes packed;  // aligned as the backend's
  if (panels) {
    packed.resize(panel_matrix_bytes(type, num_rows, n));
    pack_panels(type, matrix.data(), row_bytes, num_rows, n, packed.data());
  }
  const std::vector<uint8_t> act = random_activations(type, n, num_tokens);
  const size_t act_bytes = activation_row_size(type, n);
  std::vector<uint8_t> expanded;
  if (kernel == MatmulKernel::kPanelsExpanded) {
    const size_t eb = panel_expanded_row_bytes(type, n, panel_kernel);
    expanded.resize(eb * static_cast<size_t>(num_tokens));
    for (int64_t t = 0; t < num_tokens; ++t)
      expand_for_panels(type, act.data() + act_bytes * t, n, expanded.data() + eb * t, panel_kernel);
  }
  std::vector<float> out(static_cast<size_t>(num_rows * num_tokens));
  // As cpu_matmul does: per task of 16 rows, every token.
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; r += kPanelRows) {
      if (panels) {
        panel_dot(type, n, packed.data(), r / kPanelRows, kPanelRows, act.data(), act_bytes, num_tokens,
                  out.data() + r, num_rows, expanded.empty() ? nullptr : expanded.data(), panel_kernel);
      } else {
        for (int64_t t = 0; t < num_tokens; ++t) {
          vec_dot_rows(type, n, matrix.data() + r * row_bytes, row_bytes, kPanelRows, act.data() + act_bytes * t,
                       out.data() + t * num_rows + r, WeightAccess::kCached);
        }
      }
    }
  };
  const double pps =
      passes_per_second(min_seconds, [&](int64_t passes) { return run_split(num_rows, threads, kPanelRows, passes, body); });
  return pps * static_cast<double>(n * num_rows * num_tokens) / 1e9;
}

double measure_vec_dot_rows(GgmlType type, int64_t n, int64_t num_rows, int threads, double min_seconds) {
  threads = std::max(1, threads);
  const std::vector<uint8_t> matrix = random_matrix(type, n, num_rows);
  const size_t row_bytes = ggml_row_size(type, n);
  const std::vector<uint8_t> act = random_activations(type, n, 1);
  std::vector<float> out(static_cast<size_t>(num_rows));
  auto body = [&](int64_t begin, int64_t end) {
    vec_dot_rows(type, n, matrix.data() + begin * row_bytes, row_bytes, end - begin, act.data(), out.data() + begin);
  };
  const double pps =
      passes_per_second(min_seconds, [&](int64_t passes) { return run_split(num_rows, threads, 1, passes, body); });
  return static_cast<double>(matrix.size()) * pps / 1e9;
}

std::string run_quant_bench(int threads) {
  const GgmlType types[] = {GgmlType::Q4_1, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q5_K,
                            GgmlType::Q6_K, GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::Q5_1,
                            GgmlType::F16,  GgmlType::BF16, GgmlType::F32};
  std::string report = format("vec_dot_rows: GB/s of weights, %d thread(s), %s path\n", threads, quant_simd_name());
  report += format("%-6s %6s %14s %14s\n", "type", "n", "hot (256 KB)", "memory (64 MB)");
  for (GgmlType type : types) {
    for (int64_t n : {int64_t{576}, int64_t{1536}}) {
      const int64_t cols = type == GgmlType::Q4_K || type == GgmlType::Q5_K || type == GgmlType::Q6_K
                               ? (n + 255) / 256 * 256  // 576 is not a whole K-quant row: 768
                               : n;
      const size_t row_bytes = ggml_row_size(type, cols);
      const int64_t hot_rows = std::max<int64_t>(16, (256 << 10) / static_cast<int64_t>(row_bytes));
      const int64_t cold_rows = (int64_t{64} << 20) / static_cast<int64_t>(row_bytes);
      const double hot = measure_vec_dot_rows(type, cols, hot_rows, threads);
      const double cold = measure_vec_dot_rows(type, cols, cold_rows, threads);
      report += format("%-6s %6lld %14.1f %14.1f\n", std::string(ggml_type_name(static_cast<uint32_t>(type))).c_str(),
                       static_cast<long long>(cols), hot, cold);
    }
  }
  // Each SIMD panel kernel, compact and expanded; ratios to row-major (vec_dot_rows).
  std::vector<PanelKernel> kernels = available_panel_kernels();
  kernels.erase(kernels.begin());  // the scalar reference: not a contender
  report += format("\nmatmul kernels: GMAC/s, %d thread(s), a ~256 KB matrix (cache-hot), 16 rows per task;\n"
                   "panels with compact (c) and expanded (x) activations; ratios to row-major\n", threads);
  report += format("%-6s %6s %6s %10s", "type", "n", "tokens", "row-major");
  for (PanelKernel k : kernels) {
    const std::string name(panel_kernel_name(k));
    report += format(" %13s %13s %8s", (name + " c").c_str(), (name + " x").c_str(), "ratio x");
  }
  report += "\n";
  for (GgmlType type : {GgmlType::Q4_1, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q4_K,
                        GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q3_K, GgmlType::Q2_K, GgmlType::IQ4_XS, GgmlType::F16,
                        GgmlType::BF16}) {
    const bool k_quant = ggml_type_traits(type).block_size == kQKK;
    for (int64_t n : {k_quant ? int64_t{768} : int64_t{576}, int64_t{1536}}) {
      const int64_t rows = (256 << 10) / static_cast<int64_t>(ggml_row_size(type, n));
      for (int64_t tokens : {int64_t{1}, int64_t{8}, int64_t{16}}) {
        const double row_major =
            measure_matmul(type, n, rows, tokens, MatmulKernel::kRowMajor, threads, PanelKernel::kScalar);
        report += format("%-6s %6lld %6lld %10.1f", std::string(ggml_type_name(static_cast<uint32_t>(type))).c_str(),
                         static_cast<long long>(n), static_cast<long long>(tokens), row_major);
        for (PanelKernel k : kernels) {
          const double compact = measure_matmul(type, n, rows, tokens, MatmulKernel::kPanels, threads, k);
          const double expanded = measure_matmul(type, n, rows, tokens, MatmulKernel::kPanelsExpanded, threads, k);
          report += format(" %13.1f %13.1f %7.2fx", compact, expanded, expanded / row_major);
        }
        report += "\n";
      }
    }
  }
  return report;
}

}  // namespace pagedchat
