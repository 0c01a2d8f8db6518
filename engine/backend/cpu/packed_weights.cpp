#include "engine/backend/cpu/packed_weights.h"

#include <algorithm>

#include "engine/quant/panel.h"

namespace pagedchat::cpu {

PackedWeights::PackedWeights(const ModelWeights& weights, ThreadPool& pool, const LoadProgress& progress) {
  std::vector<const WeightMatrix*> all;
  for (const LayerWeights& l : weights.layers) {
    for (const WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) all.push_back(m);
  }
  all.push_back(&weights.output);
  std::vector<const WeightMatrix*> todo;
  for (const WeightMatrix* m : all) {
    if (panel_supported(m->type) && !packed_.contains(m)) {
      PackedMatrix& p = packed_[m];
      p = {m->type, m->rows, m->cols, std::vector<uint8_t>(panel_matrix_bytes(m->type, m->rows, m->cols))};
      todo.push_back(m);
    }
  }
  // The map is complete before the workers write into its (stable) elements. Batches of a
  // few matrices per thread keep the workers busy and the progress reports frequent.
  const int64_t batch = 2 * static_cast<int64_t>(pool.num_threads());
  const int64_t total = static_cast<int64_t>(todo.size());
  for (int64_t first = 0; first < total; first += batch) {
    progress.report("packing weights", static_cast<double>(first) / static_cast<double>(total));
    pool.parallel_for(std::min(batch, total - first), [&](int64_t i) {
      const WeightMatrix& m = *todo[static_cast<size_t>(first + i)];
      pack_panels(m.type, m.data, m.row_bytes, m.rows, m.cols, packed_.at(&m).bytes.data());
    });
  }
  progress.report("packing weights", 1.0);
}

const PackedMatrix* PackedWeights::find(const WeightMatrix& m) const {
  auto it = packed_.find(&m);
  return it == packed_.end() ? nullptr : &it->second;
}

size_t PackedWeights::bytes() const {
  size_t total = 0;
  for (const auto& [m, p] : packed_) total += p.bytes.size();
  return total;
}

}  // namespace pagedchat::cpu
