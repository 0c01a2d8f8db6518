#include "engine/backend/cpu/packed_weights.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "engine/quant/panel.h"

namespace pagedchat::cpu {
namespace {
// Source bytes a thread packs between two hand-backs of file pages: small against any model
// (the peak above the file's size is about this times the thread count), large against a page.
constexpr size_t kStretchBytes = 4u << 20;

uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}
}  // namespace

bool experts_fit_packed(const ModelWeights& weights) {
  uint64_t expert_bytes = 0;
  for (const LayerWeights& l : weights.layers)
    for (const ExpertWeights& e : l.experts)
      for (const WeightMatrix* m : {&e.gate, &e.up, &e.down}) expert_bytes += static_cast<uint64_t>(m->rows) * m->row_bytes;
  return expert_bytes <= physical_memory_bytes() / 2;
}

PackedWeights::PackedWeights(const ModelWeights& weights, ThreadPool& pool, const LoadProgress& progress) {
  std::vector<const WeightMatrix*> all;
  const bool pack_experts = experts_fit_packed(weights);
  for (const LayerWeights& l : weights.layers) {
    for (const WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo}) all.push_back(m);
    if (l.experts.empty()) {
      for (const WeightMatrix* m : {&l.w_gate, &l.w_up, &l.w_down}) all.push_back(m);
      continue;
    }
    all.push_back(&l.router);
    if (pack_experts)
      for (const ExpertWeights& e : l.experts)
        for (const WeightMatrix* m : {&e.gate, &e.up, &e.down}) all.push_back(m);
  }
  all.push_back(&weights.output);
  std::vector<const WeightMatrix*> todo;
  uint64_t total_bytes = 0;
  for (const WeightMatrix* m : all) {
    if (panel_supported(m->type) && !packed_.contains(m)) {
      packed_[m] = {m->type, m->rows, m->cols, {}};
      todo.push_back(m);
      total_bytes += static_cast<uint64_t>(m->rows) * m->row_bytes;
    }
  }
  uint64_t done_bytes = 0;
  const int64_t threads = pool.num_threads();
  for (const WeightMatrix* m : todo) {
    PackedMatrix& p = packed_.at(m);
    p.bytes.resize(panel_matrix_bytes(m->type, m->rows, m->cols));
    // Stretches of whole panels; each round gives every thread one, then hands their file pages
    // back (not the embedding's, when the output matrix is the embedding: its rows are read).
    const int64_t num_panels = (m->rows + kPanelRows - 1) / kPanelRows;
    const size_t panel_source_bytes = static_cast<size_t>(kPanelRows) * m->row_bytes;
    const int64_t per_stretch = std::max<int64_t>(1, static_cast<int64_t>(kStretchBytes / panel_source_bytes));
    const size_t packed_panel_bytes = panel_matrix_bytes(m->type, kPanelRows, m->cols);
    const bool release = m->data != weights.token_embedding.data;
    for (int64_t first = 0; first < num_panels; first += per_stretch * threads) {
      progress.report("packing weights", static_cast<double>(done_bytes) / static_cast<double>(total_bytes));
      const int64_t end = std::min(num_panels, first + per_stretch * threads);
      pool.parallel_for((end - first + per_stretch - 1) / per_stretch, [&](int64_t s) {
        const int64_t p0 = first + s * per_stretch, p1 = std::min(end, p0 + per_stretch);
        const int64_t row0 = p0 * kPanelRows, rows = std::min(m->rows, p1 * kPanelRows) - row0;
        pack_panels(m->type, m->row(row0), m->row_bytes, rows, m->cols,
                    p.bytes.data() + static_cast<size_t>(p0) * packed_panel_bytes);
      });
      const int64_t row0 = first * kPanelRows, row1 = std::min(m->rows, end * kPanelRows);
      if (release) weights.file.release_pages(m->row(row0), static_cast<size_t>(row1 - row0) * m->row_bytes);
      done_bytes += static_cast<uint64_t>(row1 - row0) * m->row_bytes;
    }
  }
  // Everything else a step reads, row-major, so that no step reads the file (the header says why).
  std::vector<const WeightMatrix*> rows_to_copy{&weights.token_embedding};
  for (const WeightMatrix* m : all)
    if (!packed_.contains(m)) rows_to_copy.push_back(m);
  for (const WeightMatrix* m : rows_to_copy) {
    PackedMatrix& p = packed_[m];
    p = {m->type, m->rows, m->cols, true, {}};
    const size_t total = static_cast<size_t>(m->rows) * m->row_bytes;
    p.bytes.resize(total);
    for (size_t first = 0; first < total; first += kStretchBytes * static_cast<size_t>(threads)) {
      const size_t end = std::min(total, first + kStretchBytes * static_cast<size_t>(threads));
      pool.parallel_for(static_cast<int64_t>((end - first + kStretchBytes - 1) / kStretchBytes), [&](int64_t s) {
        const size_t from = first + static_cast<size_t>(s) * kStretchBytes, n = std::min(kStretchBytes, end - from);
        std::memcpy(p.bytes.data() + from, m->data + from, n);
      });
      weights.file.release_pages(m->data + first, end - first);
    }
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
