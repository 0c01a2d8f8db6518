// `bench quant-quality`: what quantizing a model costs in its predictions, and what an
// importance matrix and a GPTQ-style pass buy back (engine/quantize/quality_comparison.h): each
// type plainly, weighted by an importance matrix measured by our engine on a calibration text,
// and with the GPTQ-style pass on top (--no-gptq leaves it out); every variant reads a
// held-out text and its next-token distributions are compared with the original's. The
// calibration and held-out texts differ (defaults: the GPL-3 and the Apache-2.0 licence texts
// Debian ships), so nothing is graded on what it was fitted to.

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "app/cli/cli_args.h"
#include "app/cli/commands.h"
#include "engine/common/error.h"
#include "engine/quantize/quality_comparison.h"

namespace pagedchat::cli {
namespace {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const std::string item = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

int cmd_bench_quant_quality(const std::vector<std::string>& argv) {
  Args args(argv, {"model", "text", "calibration", "imatrix", "types", "tokens", "chunk", "threads", "keep"},
            {"json", "no-gptq"});
  const auto model_path = args.get("model");
  if (!model_path) fail("bench quant-quality needs --model: a 16- or 32-bit GGUF (F16, BF16 or F32)");
  const std::string text_path = args.get_or("text", "/usr/share/common-licenses/Apache-2.0");
  const std::string calibration_path = args.get_or("calibration", "/usr/share/common-licenses/GPL-3");
  const bool json = args.flag("json");
  namespace fs = std::filesystem;

  quantize::ComparisonOptions o;
  o.source_path = *model_path;
  const fs::path keep = args.get_or("keep", "");
  o.keep_files = !keep.empty();
  o.work_dir = (keep.empty() ? fs::temp_directory_path() / ("pagedchat-quant-quality-" + std::to_string(::getpid())) : keep).string();
  o.calibration_text = read_text_file(calibration_path, "--calibration");
  o.calibration_name = fs::path(calibration_path).filename().string();
  o.heldout_text = read_text_file(text_path, "--text");
  o.types.clear();
  for (const std::string& type : split_list(args.get_or("types", "Q4_K_M,Q3_K_M,Q2_K"))) {
    const auto file_type = quantize::file_type_from_name(type);
    if (!file_type) fail("unknown type '%s' in --types (one of %s)", type.c_str(), quantize::file_type_names().c_str());
    o.types.push_back(*file_type);
  }
  o.gptq = !args.flag("no-gptq");
  o.heldout_tokens = args.get_int("tokens", 2048, 64, 1 << 20);
  o.chunk = args.get_int("chunk", 512, 16, 1 << 16);
  o.num_threads = args.get_int("threads", 0, 0, 1024);
  quantize::ImportanceMatrix given;
  std::string importance_label = "measured on " + o.calibration_name;
  if (auto path = args.get("imatrix")) {
    given = quantize::ImportanceMatrix::load(*path);
    o.importance = &given;
    importance_label = *path;
  }

  std::string last_stage;
  const quantize::QualityComparison r = quantize::compare_quantizations(o, [&](const quantize::ComparisonProgress& p) {
    if (json || p.stage == last_stage) return;
    last_stage = p.stage;
    std::fprintf(stderr, "%s...\n", p.stage.c_str());
  });
  if (!o.keep_files) fs::remove_all(o.work_dir);

  if (!json)
    std::printf("model %s (%s weights), held-out %s: %d chunks of %d tokens; importance matrix %s\n"
                "KL(original || quantized) of the next-token distribution; original perplexity %.4f\n"
                "%-16s %8s %12s %12s %11s %12s\n",
                model_path->c_str(), r.source_type.c_str(), text_path.c_str(), r.chunks, r.chunk, importance_label.c_str(),
                r.reference_perplexity, "variant", "bits/w", "mean KL", "p99 KL", "top-1 same", "perplexity");
  for (const quantize::VariantQuality& v : r.variants) {
    const std::string type(quantize::file_type_info(v.type).name);
    if (json)
      std::printf("{\"bench\":\"quant-quality\",\"type\":\"%s\",\"imatrix\":%s,\"gptq\":%s,\"bits_per_weight\":%.4f,"
                  "\"mean_kl\":%.4e,\"p99_kl\":%.4e,\"max_kl\":%.4e,\"top1_agreement\":%.5f,\"perplexity\":%.4f,"
                  "\"original_perplexity\":%.4f,\"positions\":%d}\n",
                  type.c_str(), v.importance ? "true" : "false", v.gptq ? "true" : "false", v.bits_per_weight, v.mean_kl,
                  v.p99_kl, v.max_kl, v.top1, v.perplexity, r.reference_perplexity, r.positions);
    else
      std::printf("%-16s %8.3f %12.4e %12.4e %10.2f%% %12.4f\n", v.label.c_str(), v.bits_per_weight, v.mean_kl, v.p99_kl,
                  100.0 * v.top1, v.perplexity);
  }
  if (!json && !r.channels.tensor.empty()) {
    // Where the error sits: the loudest 1% of one matrix's input channels, and their share of
    // each variant's output error in that matrix.
    const auto& p = r.channels;
    std::printf("%s: its loudest %zu of %zu input channels carry this share of each variant's output error there:\n",
                p.tensor.c_str(), p.loud_count(), p.activation.size());
    for (size_t v = 0; v < r.variants.size(); ++v) {
      const auto e = p.error_of(v);
      std::printf("  %-16s %5.1f%% (error %.4e)\n", r.variants[v].label.c_str(), e.total > 0 ? 100.0 * e.loud / e.total : 0.0,
                  e.total);
    }
  }
  return 0;
}

}  // namespace pagedchat::cli
