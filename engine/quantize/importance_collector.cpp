#include "engine/quantize/importance_collector.h"

#include <algorithm>

#include "engine/common/error.h"

namespace pagedchat::quantize {

namespace {
constexpr int64_t kMinDenseRows = 16;
}

ImportanceCollector::ImportanceCollector(const ModelWeights& weights) {
  const GgufFile& f = weights.file;
  for (const auto& t : f.tensors()) {
    if (t.shape.size() < 2 || t.name.compare(0, 4, "blk.") != 0) continue;
    const int64_t matrices = t.num_rows() / t.shape[1];
    const uint8_t* begin = f.tensor_data(t);
    sources_.push_back({begin, begin + t.num_bytes, t.name, static_cast<size_t>(t.num_bytes / matrices),
                        static_cast<int>(matrices), t.shape[0]});
  }
  if (sources_.empty()) fail("the model has no layer matrices in a file to measure (random weights?)");
  std::sort(sources_.begin(), sources_.end(), [](const Source& a, const Source& b) { return a.begin < b.begin; });
}

const ImportanceCollector::Source* ImportanceCollector::source_of(const uint8_t* data) const {
  auto it = std::upper_bound(sources_.begin(), sources_.end(), data,
                             [](const uint8_t* p, const Source& s) { return p < s.begin; });
  if (it == sources_.begin()) return nullptr;
  --it;
  return data < it->end ? &*it : nullptr;
}

void ImportanceCollector::observe(const WeightMatrix& w, const float* x, int64_t num_rows) {
  const Source* s = source_of(w.data);
  if (!s || w.cols != s->cols) return;  // the output projection, or nothing of the layers
  if (s->num_matrices == 1 && num_rows < kMinDenseRows) return;
  Sums& acc = sums_[s->name];
  if (acc.sums.empty()) {
    acc.sums.assign(static_cast<size_t>(s->num_matrices * s->cols), 0.0);
    acc.counts.assign(static_cast<size_t>(s->num_matrices), 0);
  }
  const auto matrix = static_cast<size_t>((w.data - s->begin) / static_cast<ptrdiff_t>(s->matrix_bytes));
  double* sums = acc.sums.data() + matrix * static_cast<size_t>(s->cols);
  for (int64_t r = 0; r < num_rows; ++r) {
    const float* row = x + r * s->cols;
    for (int64_t c = 0; c < s->cols; ++c) sums[c] += static_cast<double>(row[c]) * row[c];
  }
  acc.counts[matrix] += num_rows;
}

ImportanceMatrix ImportanceCollector::matrix(std::vector<std::string> datasets, uint32_t chunk_count,
                                             uint32_t chunk_size) const {
  ImportanceMatrix m;
  m.datasets = std::move(datasets);
  m.chunk_count = chunk_count;
  m.chunk_size = chunk_size;
  for (const auto& [name, acc] : sums_) {
    ImportanceEntry e;
    e.sums.assign(acc.sums.begin(), acc.sums.end());
    e.counts.assign(acc.counts.begin(), acc.counts.end());
    m.entries.emplace(name, std::move(e));
  }
  return m;
}

}  // namespace pagedchat::quantize
