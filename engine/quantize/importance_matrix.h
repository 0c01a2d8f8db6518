#pragma once
// An importance matrix: for each weight matrix of a model, the sum over calibration tokens of
// the square of every input channel's activation, and how many tokens were summed (per expert
// for a mixture's 3-D tensors). Quantizing with it weighs each column's rounding error by the
// mean square of what that column multiplies (AWQ's observation: a few input channels carry
// large activations, and their weights' errors cost the most).
//
// Files are llama.cpp's: the GGUF form llama-imatrix writes (tensors "<name>.in_sum2" [cols,
// matrices] and "<name>.counts" [1, matrices], keys imatrix.datasets / chunk_count /
// chunk_size) is read and written; the older binary .dat form is read. So an importance
// matrix from either tool works with either quantizer.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pagedchat::quantize {

struct ImportanceEntry {
  std::vector<float> sums;    // [matrices][cols]: sum of x^2 per input column
  std::vector<float> counts;  // [matrices]: tokens summed
  int64_t cols() const { return counts.empty() ? 0 : static_cast<int64_t>(sums.size() / counts.size()); }
};

struct ImportanceMatrix {
  std::map<std::string, ImportanceEntry> entries;  // by weight tensor name ("blk.0.attn_q.weight")
  std::vector<std::string> datasets;               // what it was computed on (file names)
  uint32_t chunk_count = 0;
  uint32_t chunk_size = 0;                         // tokens per chunk
  bool legacy = false;                             // read from a .dat file

  // Throws Error naming the problem (not an importance matrix, truncated, sums and counts
  // that do not match, non-finite values).
  static ImportanceMatrix load(const std::string& path);
  // Writes the GGUF form, whole or not at all (a temporary file renamed into place).
  void save(const std::string& path) const;

  // The per-column weights a quantizer uses for one tensor: sums / count for each matrix (a
  // matrix no token reached gets 1s), [matrices][cols]. Empty if the tensor has no entry.
  std::vector<float> column_weights(const std::string& tensor) const;
};

}  // namespace pagedchat::quantize
