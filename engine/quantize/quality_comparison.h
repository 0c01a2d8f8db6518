#pragma once
// What quantizing a model costs in its predictions, and what activation-aware rounding buys
// back (`bench quant-quality`, the quantization lesson): a 16/32-bit model is quantized to each
// type plainly, weighted by an importance matrix (AWQ's point: the input channels that meet
// large activations matter most) and with a GPTQ-style pass on top (gptq.h), both measured by
// our engine on a calibration text; then every variant reads a held-out text and its
// next-token distributions are compared with the original's, position by position: mean and
// 99th-percentile KL(original || variant), top-1 agreement, the text's perplexity.
//
// And where the error sits: for the layer matrix whose loudest input channel stands furthest
// above its mean, each column's mean activation square and, per variant, the column's share of
// the output error the rounding costs (through the calibration's H: e_c (H e)_c, which sums to
// e H e^T; the diagonal alone without Hessians), the picture of why the weighting helps.

#include <algorithm>
#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "engine/quantize/file_type.h"
#include "engine/quantize/importance_matrix.h"

namespace pagedchat::quantize {

struct ComparisonOptions {
  std::string source_path;          // a 16/32-bit GGUF (a quantized one is widened first, said in the results)
  std::string work_dir;             // the variants' files go here (and are removed unless keep_files)
  std::string calibration_text, calibration_name;
  std::string heldout_text;
  std::vector<FileType> types = {FileType::Q4_K_M, FileType::Q3_K_M, FileType::Q2_K};
  bool gptq = true;                 // the third variant of each type
  const ImportanceMatrix* importance = nullptr;  // given: not measured (the Hessians still are, for gptq)
  int chunk = 512;                  // tokens a chunk, calibration and held-out
  int calibration_chunks = 0;       // 0: as many as the text fills
  int heldout_tokens = 2048;
  int num_threads = 0;
  bool keep_files = false;
};

struct VariantQuality {
  std::string label;  // "Q3_K_M", "Q3_K_M+imatrix", "Q3_K_M+gptq"
  FileType type = FileType::Q4_K_M;
  bool importance = false, gptq = false;
  double bits_per_weight = 0;
  double mean_kl = 0, p99_kl = 0, max_kl = 0, top1 = 0, perplexity = 0;
  std::string path;   // the file (removed unless keep_files)
};

// One matrix's columns: where the rounding error lands.
struct ChannelPicture {
  std::string tensor;
  std::vector<float> activation;           // [cols] mean square of the input the column meets
  std::vector<std::vector<float>> cost;    // [variant][cols] the column's share of the mean output error
  bool full_hessian = false;               // shares through H's blocks (else its diagonal alone)

  // The columns loudest first, and how many of them make the loudest 1% (at least one).
  std::vector<size_t> by_loudness() const;
  size_t loud_count() const { return activation.empty() ? 0 : std::max<size_t>(1, activation.size() / 100); }
  // A variant's output error in this matrix (its columns' shares summed) and the loudest 1%'s part.
  struct ErrorShare {
    double total = 0, loud = 0;
  };
  ErrorShare error_of(size_t variant) const;
};

struct QualityComparison {
  std::string source_type;                 // the source's weight type ("F16", or the quantized one it was widened from)
  double reference_perplexity = 0;
  int chunks = 0, chunk = 0, positions = 0;
  std::vector<VariantQuality> variants;    // per type: plain, +imatrix, +gptq
  ImportanceMatrix importance;
  ChannelPicture channels;
};

struct ComparisonProgress {
  std::string stage;  // "calibrating", "quantizing Q3_K_M+gptq", "reading the held-out text"
  double fraction = 0;  // of the whole comparison
};

// Throws Error (a bad source, texts too short, a full disk, `cancel` set: "cancelled").
QualityComparison compare_quantizations(const ComparisonOptions& options,
                                        const std::function<void(const ComparisonProgress&)>& progress = {},
                                        const std::atomic<bool>* cancel = nullptr);

}  // namespace pagedchat::quantize
