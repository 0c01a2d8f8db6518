// `pagedchat-cli quantize SOURCE [OUTPUT] TYPE`: a 16/32-bit GGUF into a quantized one, the
// file llama-quantize writes for the same arguments (engine/quantize/model_quantizer.h), with
// a progress bar, then checked by our own loader's header checks. With --gptq TEXT the source
// first reads a calibration text and a GPTQ-style pass corrects each matrix's rounding
// (engine/quantize/gptq.h).

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>

#include "app/cli/cli_args.h"
#include "app/cli/commands.h"
#include "engine/common/error.h"
#include "engine/common/ggml_type.h"
#include "engine/model/model.h"
#include "engine/quantize/calibration.h"
#include "engine/quantize/model_quantizer.h"
#include "models/model_summary.h"

namespace pagedchat::cli {

namespace {

using quantize::FileType;

// model-f16.gguf -> model-Q4_K_M.gguf (a 16/32-bit marker in the name is replaced), else
// model.gguf -> model-Q4_K_M.gguf, beside the source.
std::string default_output(const std::string& source, std::string_view type) {
  namespace fs = std::filesystem;
  const fs::path p(source);
  std::string stem = p.stem().string();
  for (const char* marker : {"-F32", "-F16", "-BF16", "-f32", "-f16", "-bf16", ".F32", ".F16", ".BF16", ".f32", ".f16", ".bf16"}) {
    const std::string m(marker);
    if (stem.size() > m.size() && stem.compare(stem.size() - m.size(), m.size(), m) == 0) {
      stem.resize(stem.size() - m.size());
      break;
    }
  }
  return (p.parent_path() / (stem + "-" + std::string(type) + ".gguf")).string();
}

void print_plan(const quantize::QuantizeSummary& s) {
  for (const auto& p : s.plan)
    std::printf("%-40s %-6s -> %-6s%s\n", p.source->name.c_str(), std::string(ggml_type_traits(p.source->type).name).c_str(),
                std::string(ggml_type_traits(p.type).name).c_str(), p.fell_back ? "  (row length: fell back)" : "");
}

// "Q4_K 112, Q6_K 17, F32 33": tensors per type in the output.
std::string type_counts(const quantize::QuantizeSummary& s) {
  std::map<std::string, int> counts;
  for (const auto& p : s.plan) ++counts[std::string(ggml_type_traits(p.type).name)];
  std::string out;
  for (const auto& [name, n] : counts) out += (out.empty() ? "" : ", ") + name + " " + std::to_string(n);
  return out;
}

class ProgressBar {
 public:
  explicit ProgressBar(bool enabled) : enabled_(enabled) {}
  void update(const quantize::QuantizeProgress& p) {
    if (!enabled_ || p.source_bytes_total == 0) return;
    const int percent = static_cast<int>(100 * p.source_bytes_done / p.source_bytes_total);
    if (percent == last_percent_ && p.tensor == last_tensor_) return;
    last_percent_ = percent;
    last_tensor_ = p.tensor;
    constexpr int kWidth = 30;
    const int filled = percent * kWidth / 100;
    std::fprintf(stderr, "\r[%.*s%*s] %3d%%  %zu/%zu %-36.36s", filled, "##############################",
                 kWidth - filled, "", percent, p.tensor + 1, p.num_tensors, p.tensor_name.c_str());
    std::fflush(stderr);
  }
  void done() {
    if (enabled_ && last_percent_ >= 0) std::fputc('\n', stderr);
  }

 private:
  bool enabled_;
  int last_percent_ = -1;
  size_t last_tensor_ = static_cast<size_t>(-1);
};

double mib(uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

}  // namespace

int cmd_quantize(const std::vector<std::string>& argv) {
  Args args(argv, {"imatrix", "threads", "gptq", "chunks"}, {"allow-requantize", "dry-run", "quiet"}, 3);
  const auto& pos = args.positional();
  if (pos.size() < 2)
    fail("usage: pagedchat-cli quantize SOURCE.gguf [OUTPUT.gguf] TYPE [--imatrix FILE] [--gptq TEXT [--chunks N]] "
         "[--threads N] [--allow-requantize] [--dry-run]; TYPE is one of %s",
         quantize::file_type_names().c_str());
  const std::string type_name = pos.back();
  const auto file_type = quantize::file_type_from_name(type_name);
  if (!file_type) fail("unknown type '%s' (one of %s)", type_name.c_str(), quantize::file_type_names().c_str());
  const auto& info = quantize::file_type_info(*file_type);

  quantize::QuantizeOptions options;
  options.source_path = pos[0];
  options.output_path = pos.size() == 3 ? pos[1] : default_output(pos[0], info.name);
  options.file_type = *file_type;
  options.allow_requantize = args.flag("allow-requantize");
  options.num_threads = args.get_int("threads", 0, 0, 1024);
  quantize::ImportanceMatrix importance;
  if (auto path = args.get("imatrix")) {
    importance = quantize::ImportanceMatrix::load(*path);
    options.importance = &importance;
    options.importance_path = *path;
  }
  if (std::filesystem::equivalent(options.source_path, options.output_path) ||
      options.output_path == options.source_path)
    fail("the output would replace the source '%s'", options.source_path.c_str());

  if (args.flag("dry-run")) {
    const auto s = quantize::plan_model(options);
    print_plan(s);
    std::printf("%s: %.1f MiB -> %.1f MiB (%.2f bits per weight); %s\n", std::string(info.name).c_str(),
                mib(s.source_bytes), mib(s.output_bytes), 8.0 * static_cast<double>(s.output_bytes) / static_cast<double>(s.num_elements),
                type_counts(s).c_str());
    return 0;
  }

  // --gptq TEXT: the source model reads the calibration text first; its inputs' second moments
  // drive the GPTQ-style pass, and its importance matrix (unless --imatrix gave one) weighs
  // the rounding of every matrix.
  quantize::Calibration calibration;
  if (auto text_path = args.get("gptq"); text_path) {
    quantize::CalibrationOptions o;
    o.max_chunks = args.get_int("chunks", 8, 1, 1 << 20);
    o.num_threads = options.num_threads;
    o.hessians = true;
    o.dataset_name = std::filesystem::path(*text_path).filename().string();
    const std::string text = read_text_file(*text_path, "--gptq");
    auto model = Model::load(options.source_path);
    calibration = quantize::calibrate(*model, text, o, [&](const quantize::CalibrationProgress& p) {
      if (!args.flag("quiet"))
        std::fprintf(stderr, "\rcalibrating: chunk %d/%d, perplexity %.3f   ", p.chunk, p.num_chunks, p.perplexity);
    });
    if (!args.flag("quiet"))
      std::fprintf(stderr, "\nHessians of %zu layer inputs: %.0f MB\n", calibration.hessians.by_leader.size(),
                   static_cast<double>(calibration.hessians.bytes()) / 1e6);
    options.hessians = &calibration.hessians;
    if (!options.importance) {
      importance = std::move(calibration.importance);
      options.importance = &importance;
      options.importance_path = "measured on " + o.dataset_name;
    }
  }
  ProgressBar bar(!args.flag("quiet"));
  const auto start = std::chrono::steady_clock::now();
  const auto s = quantize::quantize_model(options, [&](const quantize::QuantizeProgress& p) { bar.update(p); });
  bar.done();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("wrote %s: %s, %.1f MiB -> %.1f MiB (%.2f bits per weight) in %.1f s\n", options.output_path.c_str(),
              std::string(info.name).c_str(), mib(s.source_bytes), mib(s.output_bytes),
              8.0 * static_cast<double>(s.output_bytes) / static_cast<double>(s.num_elements), seconds);
  std::printf("tensors: %s%s\n", type_counts(s).c_str(),
              s.fallbacks ? (", " + std::to_string(s.fallbacks) + " fell back to a type their rows fit").c_str() : "");
  if (options.hessians)
    std::printf("GPTQ-style pass: %d of the matrices (the rest rounded with the importance weights alone)\n",
                s.gptq_tensors);
  if (options.importance && s.without_importance > 0)
    std::printf("note: the importance matrix had no entry for %d of the matrices (quantized without it)\n",
                s.without_importance);
  // The result must open here: the same header checks a load makes first.
  const auto summary = models::summarize_model(options.output_path);
  if (!summary.supported) {
    std::printf("note: written, but this build cannot run it: %s\n", summary.problem.c_str());
    return 0;
  }
  std::printf("checked: %s (%s, %s parameters) opens here\n", summary.name.c_str(), summary.architecture.c_str(),
              models::format_parameters(summary.parameters).c_str());
  return 0;
}

}  // namespace pagedchat::cli
