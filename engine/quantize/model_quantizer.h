#pragma once
// Writes a model file in another type: a 16- or 32-bit GGUF in, a Q4_K_M (or any file_types()
// mix) out, the file llama-quantize writes for the same input, byte for byte (the same keys,
// tensor order, types and bytes; tests/engine/quantize). Memory stays bounded: one slab of at
// most 16 Mi elements of one tensor is in floats at a time, the source is mapped.
//
// With an importance matrix each matrix's columns are weighted by it (importance_matrix.h)
// and the file records which one (quantize.imatrix.* keys, as llama-quantize writes them).
// With Hessians the dense layer matrices go through a GPTQ-style pass (gptq.h) and the file
// says so (quantize.gptq.damp).

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/quantize/file_type.h"
#include "engine/quantize/hessian.h"
#include "engine/quantize/importance_matrix.h"
#include "engine/quantize/tensor_plan.h"

namespace pagedchat::quantize {

struct QuantizeOptions {
  std::string source_path;
  std::string output_path;
  FileType file_type = FileType::Q4_K_M;
  // Optional. importance_path is what the output's quantize.imatrix.file key says.
  const ImportanceMatrix* importance = nullptr;
  std::string importance_path;
  // Optional: a GPTQ-style pass (gptq.h) for every dense layer matrix these statistics cover,
  // measured on the same model (calibration.h). The output is no longer llama-quantize's bytes.
  const HessianSet* hessians = nullptr;
  double gptq_damp = 0.01;
  // Quantized source tensors are refused unless this is set (requantizing loses more than
  // quantizing the original once).
  bool allow_requantize = false;
  int num_threads = 0;  // 0: all cores
};

struct QuantizeProgress {
  size_t tensor = 0, num_tensors = 0;  // the tensor being written (0-based)
  std::string tensor_name;
  uint64_t source_bytes_done = 0, source_bytes_total = 0;
};

struct QuantizeSummary {
  std::vector<PlannedTensor> plan;
  uint64_t source_bytes = 0;   // tensor data read
  uint64_t output_bytes = 0;   // the whole file written
  int64_t num_elements = 0;    // weights, for bits per weight
  int fallbacks = 0;           // tensors whose row length did not fit the mix's type
  int without_importance = 0;  // converted matrices the importance matrix had no entry for
  int gptq_tensors = 0;        // matrices written by the GPTQ-style pass
};

// Throws Error (a bad source, a type it cannot write, a requantization not allowed, an
// importance matrix whose sizes do not fit, the disk full, or `cancel` set: "cancelled"),
// leaving nothing at output_path. progress is called from this thread, at least once per
// tensor.
QuantizeSummary quantize_model(const QuantizeOptions& options,
                               const std::function<void(const QuantizeProgress&)>& progress = {},
                               const std::atomic<bool>* cancel = nullptr);

// The plan alone, for --dry-run: the tensors and types without writing anything.
QuantizeSummary plan_model(const QuantizeOptions& options);

}  // namespace pagedchat::quantize
