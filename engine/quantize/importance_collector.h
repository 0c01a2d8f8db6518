#pragma once
// Measures an importance matrix with our own engine: attached to a CPU backend
// (CpuBackend::set_matmul_observer), it adds up, for every weight matrix of the model's layers,
// the square of each input column over the tokens that matrix multiplies, and counts the tokens
// (per expert for a mixture's experts). As llama-imatrix does: only the layers' matrices
// ("blk.*": the embedding is looked up, not multiplied, and the output projection is left to
// its usual Q6_K), and dense matmuls of fewer than 16 rows are skipped (a decode step's few
// rows would weigh the statistics towards whatever was being generated).

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/backend/cpu/cpu_matmul.h"
#include "engine/model/model_weights.h"
#include "engine/quantize/importance_matrix.h"

namespace pagedchat::quantize {

class ImportanceCollector final : public cpu::MatmulObserver {
 public:
  // weights must come from a file (their tensors are named by it) and outlive the collector.
  explicit ImportanceCollector(const ModelWeights& weights);

  void observe(const WeightMatrix& w, const float* x, int64_t num_rows) override;

  // What was summed so far, as a file would hold it.
  ImportanceMatrix matrix(std::vector<std::string> datasets, uint32_t chunk_count, uint32_t chunk_size) const;

 private:
  struct Source {  // a tensor of the file, by the bytes it spans
    const uint8_t* begin;
    const uint8_t* end;
    std::string name;
    size_t matrix_bytes;  // one expert's slice (the whole tensor for a 2-D one)
    int num_matrices;
    int64_t cols;
  };
  struct Sums {
    std::vector<double> sums;     // [matrices][cols]
    std::vector<int64_t> counts;  // [matrices]
  };
  const Source* source_of(const uint8_t* data) const;

  std::vector<Source> sources_;  // sorted by begin
  std::map<std::string, Sums> sums_;
};

}  // namespace pagedchat::quantize
