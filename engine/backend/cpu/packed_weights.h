#pragma once
// The CPU backend's own copy of the weights a step reads, made once when the backend is created
// with quantized activations: the matrices with a panel layout (quant/panel.h) packed into
// panels, the rest (the token embedding, matrices of a type without panels) copied row-major.
// The mapped file keeps the originals for other readers (another backend, a CUDA upload) and
// for the float-activation path, which builds no copies.
//
// Memory: a model must not be held twice. Each buffer is allocated untouched (its pages become
// resident only as they are written) and filled a few megabytes at a time, and the file pages of
// a done stretch are handed back to the kernel at once (GgufFile::release_pages), so resident
// memory stays near the file's size throughout (docs/benchmarks.md measures it). A later reader
// of a released original reads it from the file again.
//
// Why copy what has no panels: after the load no step touches the mapped file, so a model file
// truncated or overwritten under a running app or server (issue 46) can neither kill it with
// SIGBUS nor change its weights. When the copies would not fit beside the panels in half of the
// usable memory (the machine's, or a cgroup's limit), they stay mapped and that protection lapses.
//
// A mixture of experts is packed too when its experts take at most half of the usable memory;
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
  bool row_major = false;  // a private copy of the rows as the file lays them out, not panels
  PanelBytes bytes;        // panel_matrix_bytes(type, rows, cols), or rows * the row size
};

// Whether the experts of `weights` (none: true) are small enough to be packed.
bool experts_fit_packed(const ModelWeights& weights);

class PackedWeights {
 public:
  PackedWeights() = default;
  // Packs every matrix of `weights` whose type has panels, in parallel on `pool`, reporting
  // "packing weights" between stretches of a few megabytes (a cancel throws LoadCancelled there).
  PackedWeights(const ModelWeights& weights, ThreadPool& pool, const LoadProgress& progress = {});

  // The backend's copy of m (panels, or its rows), or null when m is read from the mapped file.
  const PackedMatrix* find(const WeightMatrix& m) const;
  size_t bytes() const;

 private:
  std::unordered_map<const WeightMatrix*, PackedMatrix> packed_;
  // Matrices that read another's copy (a tied output without panels: the embedding's rows).
  std::unordered_map<const WeightMatrix*, const WeightMatrix*> aliases_;
};

}  // namespace pagedchat::cpu
