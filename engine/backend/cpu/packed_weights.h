#pragma once
// The CPU backend's own copy of the weight matrices that have a panel layout (quant/panel.h),
// packed once when the backend is created. The mapped file keeps the row-major originals for
// everything else (embedding lookups, the float-activation path, other backends).
//
// Memory: packing must not hold a model twice. Each packed buffer is allocated untouched (its
// pages become resident only as they are written) and filled a few megabytes at a time, and the
// file pages of a packed stretch are handed back to the kernel at once (GgufFile::release_pages),
// so resident memory stays near the file's size throughout (docs/benchmarks.md measures it). A
// later reader of a released original (a second backend, a CUDA upload) reads it from the file
// again. The token embedding's pages stay: its rows are looked up every step.
//
// A mixture of experts is packed too when its experts take at most half of the machine's memory;
// a larger one (a 30B-A3B file on a 16 GB machine) keeps its experts in the mapping, where the
// kernel pages them in and out as the router picks them, and they run row by row (vec_dot_rows).

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "engine/common/panel_buffer.h"
#include "engine/common/thread_pool.h"
#include "engine/model/load_progress.h"
#include "engine/model/model_weights.h"

namespace pagedchat::cpu {

struct PackedMatrix {
  GgmlType type;
  int64_t rows, cols;
  PanelBytes bytes;  // panel_matrix_bytes(type, rows, cols)
};

// Whether the experts of `weights` (none: true) are small enough to be packed.
bool experts_fit_packed(const ModelWeights& weights);

class PackedWeights {
 public:
  PackedWeights() = default;
  // Packs every matrix of `weights` whose type has panels, in parallel on `pool`, reporting
  // "packing weights" between stretches of a few megabytes (a cancel throws LoadCancelled there).
  PackedWeights(const ModelWeights& weights, ThreadPool& pool, const LoadProgress& progress = {});

  // The packed copy of m, or null when m is used row-major.
  const PackedMatrix* find(const WeightMatrix& m) const;
  size_t bytes() const;

 private:
  std::unordered_map<const WeightMatrix*, PackedMatrix> packed_;
};

}  // namespace pagedchat::cpu
