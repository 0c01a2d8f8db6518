#include "engine/backend/cpu/packed_weights.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "engine/quant/panel/panel.h"

namespace pagedchat::cpu {
namespace {
// Source bytes a thread packs between two hand-backs of file pages: small against any model
// (the peak above the file's size is about this times the thread count), large against a page.
constexpr size_t kStretchBytes = 4u << 20;

uint64_t bytes_of(const WeightMatrix& m) { return static_cast<uint64_t>(m.rows) * m.row_bytes; }

// The memory this process may use: the machine's, or less under a cgroup (v2) limit.
uint64_t usable_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  uint64_t bytes = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
  if (std::ifstream limit("/sys/fs/cgroup/memory.max"); limit) {
    uint64_t cgroup = 0;
    if (limit >> cgroup && cgroup > 0) bytes = std::min(bytes, cgroup);  // "max" reads as no number
  }
  return bytes;
}
}  // namespace

bool experts_fit_packed(const ModelWeights& weights) {
  uint64_t expert_bytes = 0;
  for (const LayerWeights& l : weights.layers)
    for (const ExpertWeights& e : l.experts)
      for (const WeightMatrix* m : {&e.gate, &e.up, &e.down}) expert_bytes += bytes_of(*m);
  return expert_bytes <= usable_memory_bytes() / 2;
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
  uint64_t total_bytes = 0, panel_bytes = 0;
  for (const WeightMatrix* m : all) {
    if (panel_supported(m->type) && !packed_.contains(m)) {
      packed_[m] = {m->type, m->rows, m->cols, false, {}};
      todo.push_back(m);
      panel_bytes += bytes_of(*m);
    }
  }
  // Everything else a step reads is copied row-major (the header says why): the embedding, and
  // what has no panels, once each (a tied output reads the embedding's copy). Unless the copies
  // would not fit beside the panels in half the memory: then they stay in the mapping, where the
  // kernel may drop their pages under pressure, and the file must stay as it is.
  std::vector<const WeightMatrix*> rows_to_copy{&weights.token_embedding};
  uint64_t copy_bytes = bytes_of(weights.token_embedding);
  for (const WeightMatrix* m : all) {
    if (packed_.contains(m)) continue;
    if (m->data == weights.token_embedding.data) {
      aliases_[m] = &weights.token_embedding;
      continue;
    }
    rows_to_copy.push_back(m);
    copy_bytes += bytes_of(*m);
  }
  if (panel_bytes + copy_bytes > usable_memory_bytes() / 2) {
    rows_to_copy.clear();
    copy_bytes = 0;
  }
  total_bytes = panel_bytes + copy_bytes;
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
  for (const WeightMatrix* m : rows_to_copy) {
    PackedMatrix& p = packed_[m];
    p = {m->type, m->rows, m->cols, true, {}};
    const size_t total = bytes_of(*m);
    p.bytes.resize(total);
    for (size_t first = 0; first < total; first += kStretchBytes * static_cast<size_t>(threads)) {
      progress.report("packing weights", static_cast<double>(done_bytes) / static_cast<double>(total_bytes));
      const size_t end = std::min(total, first + kStretchBytes * static_cast<size_t>(threads));
      pool.parallel_for(static_cast<int64_t>((end - first + kStretchBytes - 1) / kStretchBytes), [&](int64_t s) {
        const size_t from = first + static_cast<size_t>(s) * kStretchBytes, n = std::min(kStretchBytes, end - from);
        std::memcpy(p.bytes.data() + from, m->data + from, n);
      });
      weights.file.release_pages(m->data + first, end - first);
      done_bytes += end - first;
    }
  }
  progress.report("packing weights", 1.0);
}

const PackedMatrix* PackedWeights::find(const WeightMatrix& m) const {
  auto it = packed_.find(&m);
  if (it != packed_.end()) return &it->second;
  const auto alias = aliases_.find(&m);
  return alias == aliases_.end() ? nullptr : find(*alias->second);
}

size_t PackedWeights::bytes() const {
  size_t total = 0;
  for (const auto& [m, p] : packed_) total += p.bytes.size();
  return total;
}

}  // namespace pagedchat::cpu
