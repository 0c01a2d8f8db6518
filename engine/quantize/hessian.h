#pragma once
// The second-order statistics a GPTQ-style pass needs (gptq.h): for each input a layer's
// matrices multiply, H = sum over calibration tokens of x x^T, measured by our own engine as
// importance_collector.h measures the diagonal alone. Matrices that read the same input share
// one: attention's K and V read what Q reads, the FFN's up projection what its gate reads.
//
// Bounded: H is kept in diagonal blocks of at most `max_block` columns (1024 by default: 4 MiB
// of floats), so memory grows with the model's width, not its square (SmolLM2-135M: 277 MB for
// its 30 layers; a layer of an 8B model: 100 MB), and the error a rounding leaves is corrected
// only within its block. Floats, as GPTQ keeps them (each pass of 8 tokens summed in double
// first); mixtures' 3-D expert tensors get none (they are quantized with the importance
// weights alone).

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend/cpu/cpu_matmul.h"
#include "engine/common/thread_pool.h"
#include "engine/model/model_weights.h"

namespace pagedchat::quantize {

struct HessianBlocks {
  int64_t cols = 0;
  std::vector<int64_t> starts;                // each block's first column, ascending, starts[0] == 0
  std::vector<std::vector<float>> blocks;     // [block][size x size], symmetric, row-major
  int64_t tokens = 0;                         // rows summed
  int64_t block_size(size_t b) const { return (b + 1 < starts.size() ? starts[b + 1] : cols) - starts[b]; }
  double diagonal(int64_t col) const;         // H[col][col]
  size_t bytes() const;
};

// The leader of a matrix's input group: "blk.3.attn_k.weight" -> "blk.3.attn_q.weight",
// "blk.3.ffn_up.weight" -> "blk.3.ffn_gate.weight"; any other name is its own.
std::string hessian_leader(const std::string& tensor);

// The block boundaries for a row of `cols` columns: blocks of max_block (a multiple of 256,
// so no quantization block straddles two), the last one shorter.
std::vector<int64_t> hessian_block_starts(int64_t cols, int64_t max_block);

class HessianSet {
 public:
  // The statistics for a tensor (through its leader), or nullptr.
  const HessianBlocks* find(const std::string& tensor) const;
  size_t bytes() const;
  std::map<std::string, HessianBlocks> by_leader;
};

class HessianCollector final : public cpu::MatmulObserver {
 public:
  // weights come from a file and outlive the collector; num_threads: 0 for all cores.
  HessianCollector(const ModelWeights& weights, int64_t max_block = 1024, int num_threads = 0);

  // Dense layer matrices of at least 16 rows (as the importance matrix: a decode step's few
  // rows are not calibration), leaders only.
  void observe(const WeightMatrix& w, const float* x, int64_t num_rows) override;

  // What was summed, each block mirrored into a full symmetric matrix.
  HessianSet take();

 private:
  struct Source {
    const uint8_t* begin;
    const uint8_t* end;
    std::string name;  // the leader's
    int64_t cols;
  };
  std::vector<Source> sources_;  // leaders of 2-D layer matrices, sorted by begin
  int64_t max_block_;
  ThreadPool pool_;
  HessianSet set_;
};

}  // namespace pagedchat::quantize
