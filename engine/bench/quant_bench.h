#pragma once
// Micro-benchmarks of the CPU dot products for the CLI's bench command: how many GB of weights
// per second vec_dot_rows streams through per type, hot in cache and from memory; and the
// row-major kernel against panels, with each panel kernel the CPU runs, for the types that have
// them.

#include <cstdint>
#include <string>

#include "engine/common/ggml_type.h"
#include "engine/quant/panel/panel.h"

namespace pagedchat {

// Times vec_dot_rows over a (num_rows x n) matrix of `type` filled with random quants and
// plausible scales, split into `threads` contiguous row ranges as a matmul would, repeated for
// at least min_seconds. Returns weight bytes read per second, in GB/s (1e9 bytes).
double measure_vec_dot_rows(GgmlType type, int64_t n, int64_t num_rows, int threads,
                            double min_seconds = 0.2);

// Times a matmul of num_tokens activation rows with a (num_rows x n) matrix of `type`, as
// cpu_matmul runs it (tasks of 16 rows, every token per task), through vec_dot_rows or through
// panels (quant/panel.h; Q4_1, Q8_0) with `panel_kernel` and compact or expanded activations.
// Returns multiply-adds per second, in billions.
enum class MatmulKernel { kRowMajor, kPanels, kPanelsExpanded };
double measure_matmul(GgmlType type, int64_t n, int64_t num_rows, int64_t num_tokens, MatmulKernel kernel,
                      int threads, PanelKernel panel_kernel, double min_seconds = 0.2);

// A table over every supported weight type, rows of 576 and 1536 elements (SmolLM2-135M's
// widths): one column for a ~256 KB matrix (cache-resident) and one for ~64 MB (memory).
std::string run_quant_bench(int threads);

}  // namespace pagedchat
