#pragma once
// Runs a calibration text through a model to measure its importance matrix
// (importance_collector.h): the text in chunks of chunk_tokens, each chunk a fresh sequence
// (BOS first when the model wants one), every position's logits kept to report the text's
// perplexity as it goes (what llama-imatrix prints too: a sanity check that the model reads
// the text as language).

#include <atomic>
#include <functional>
#include <string>

#include "engine/model/model.h"
#include "engine/quantize/hessian.h"
#include "engine/quantize/importance_matrix.h"

namespace pagedchat::quantize {

struct CalibrationOptions {
  int chunk_tokens = 512;
  int max_chunks = 0;        // 0: as many as the text fills
  int num_threads = 0;       // 0: all cores
  std::string dataset_name;  // recorded in the matrix (imatrix.datasets)
  bool hessians = false;     // also measure the inputs' second moments (hessian.h, for --gptq)
  int64_t hessian_block = 1024;
};

struct Calibration {
  ImportanceMatrix importance;
  HessianSet hessians;  // empty unless asked for
};

struct CalibrationProgress {
  int chunk = 0, num_chunks = 0;  // chunks done, of
  double perplexity = 0;          // over the chunks done
};

// Throws Error (a text shorter than one chunk, a chunk past the model's context, `cancel` set:
// "cancelled").
Calibration calibrate(const Model& model, const std::string& text, const CalibrationOptions& options,
                      const std::function<void(const CalibrationProgress&)>& progress = {},
                      const std::atomic<bool>* cancel = nullptr);

// calibrate(), the importance matrix alone.
ImportanceMatrix measure_importance(const Model& model, const std::string& text, const CalibrationOptions& options,
                                    const std::function<void(const CalibrationProgress&)>& progress = {},
                                    const std::atomic<bool>* cancel = nullptr);

}  // namespace pagedchat::quantize
