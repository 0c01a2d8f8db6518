// `bench quant-quality`: what quantizing a model costs in its predictions, and what an
// importance matrix buys back. A 16/32-bit model is quantized to each type plainly and
// weighted by an importance matrix measured by our engine on a calibration text (AWQ's point:
// the columns that meet large activations matter most); every variant then reads a held-out
// text in chunks, and its next-token distributions are compared with the original's: mean and
// 99th-percentile KL(original || variant), top-1 agreement, the text's perplexity. The
// calibration and held-out texts differ (defaults: the GPL-3 and the Apache-2.0 licence texts
// Debian ships), so the matrix is not graded on what it was fitted to. A third variant adds a
// GPTQ-style pass (engine/quantize/gptq.h) on Hessians measured on the calibration text in the
// same pass (--no-gptq leaves it out).

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "app/cli/bench/next_token_stats.h"
#include "app/cli/cli_args.h"
#include "app/cli/commands.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/common/error.h"
#include "engine/model/model.h"
#include "engine/quantize/calibration.h"
#include "engine/quantize/model_quantizer.h"

namespace pagedchat::cli {
namespace {

struct Variant {
  std::string label;   // "Q4_K_M", "Q4_K_M+imatrix", "Q4_K_M+gptq"
  std::string type;
  bool weighted = false;
  bool gptq = false;   // (weighted too)
  double bits_per_weight = 0;
  std::unique_ptr<Model> model;
  std::unique_ptr<CpuBackend> backend;
  NextTokenStats stats;
};

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
  const std::vector<std::string> types = split_list(args.get_or("types", "Q4_K_M,Q3_K_M,Q2_K"));
  const int want = args.get_int("tokens", 2048, 64, 1 << 20);
  const int chunk = args.get_int("chunk", 512, 16, 1 << 16);
  const int threads = args.get_int("threads", 0, 0, 1024);
  const bool json = args.flag("json");
  namespace fs = std::filesystem;
  const fs::path keep = args.get_or("keep", "");
  const fs::path dir = keep.empty() ? fs::temp_directory_path() / ("pagedchat-quant-quality-" + std::to_string(::getpid())) : keep;
  fs::create_directories(dir);

  auto reference = Model::load(*model_path);
  const ModelConfig& c = reference->config();
  if (chunk > c.context_length) fail("--chunk %d is past the model's context of %d", chunk, c.context_length);

  // The importance matrix: given, or measured here on the calibration text; the GPTQ-style
  // variants' Hessians are measured on that text in the same pass.
  const bool with_gptq = !args.flag("no-gptq");
  quantize::ImportanceMatrix importance;
  quantize::HessianSet hessians;
  std::string importance_label;
  if (!args.get("imatrix") || with_gptq) {
    quantize::CalibrationOptions o;
    o.chunk_tokens = chunk;
    o.num_threads = threads;
    o.hessians = with_gptq;
    o.dataset_name = fs::path(calibration_path).filename().string();
    if (!json) std::fprintf(stderr, "measuring the importance matrix%s on %s...\n", with_gptq ? " and Hessians" : "",
                            calibration_path.c_str());
    auto measured = quantize::calibrate(*reference, read_text_file(calibration_path, "--calibration"), o);
    importance = std::move(measured.importance);
    hessians = std::move(measured.hessians);
    importance_label = (dir / "measured.imatrix.gguf").string();
    importance.save(importance_label);
  }
  if (auto given = args.get("imatrix")) {
    importance = quantize::ImportanceMatrix::load(*given);
    importance_label = *given;
  }

  std::vector<Variant> variants;
  for (const std::string& type : types) {
    const auto file_type = quantize::file_type_from_name(type);
    if (!file_type) fail("unknown type '%s' in --types (one of %s)", type.c_str(), quantize::file_type_names().c_str());
    for (int kind = 0; kind < (with_gptq ? 3 : 2); ++kind) {
      const bool weighted = kind >= 1;
      Variant v;
      v.type = type;
      v.weighted = weighted;
      v.gptq = kind == 2;
      v.label = type + (v.gptq ? "+gptq" : weighted ? "+imatrix" : "");
      quantize::QuantizeOptions q;
      q.source_path = *model_path;
      q.output_path = (dir / (v.label + ".gguf")).string();
      q.file_type = *file_type;
      q.num_threads = threads;
      q.allow_requantize = true;  // (a dequantized model is a fair source: say so in the results)
      if (weighted) {
        q.importance = &importance;
        q.importance_path = importance_label;
      }
      if (v.gptq) q.hessians = &hessians;
      if (!json) std::fprintf(stderr, "quantizing %s...\n", v.label.c_str());
      const auto summary = quantize::quantize_model(q);
      v.bits_per_weight = 8.0 * static_cast<double>(summary.output_bytes) / static_cast<double>(summary.num_elements);
      v.model = Model::load(q.output_path);
      variants.push_back(std::move(v));
    }
  }

  const std::vector<int32_t> text = reference->tokenizer->encode(read_text_file(text_path, "--text"), false, false);
  const bool bos = reference->tokenizer->add_bos() && reference->tokenizer->bos_id().has_value();
  const int per_chunk = chunk - (bos ? 1 : 0);
  const int num_chunks = std::min(static_cast<int>(text.size()) / per_chunk, (want + per_chunk - 1) / per_chunk);
  if (num_chunks == 0) fail("the text '%s' has %zu tokens, fewer than one chunk of %d", text_path.c_str(), text.size(), chunk);

  constexpr int kBlock = 16;
  const int blocks = (chunk + kBlock - 1) / kBlock;
  std::vector<int32_t> table(static_cast<size_t>(blocks));
  for (int i = 0; i < blocks; ++i) table[static_cast<size_t>(i)] = i;
  CpuBackend reference_backend(reference->weights, threads);
  reference_backend.allocate_kv({c.num_layers, c.num_kv_heads, c.head_dim, blocks, kBlock});
  for (Variant& v : variants) {
    v.backend = std::make_unique<CpuBackend>(v.model->weights, threads);
    v.backend->allocate_kv({c.num_layers, c.num_kv_heads, c.head_dim, blocks, kBlock});
  }
  NextTokenStats reference_stats;
  std::vector<float> ref_logits, logits;
  std::vector<double> ref, other;
  std::vector<int32_t> tokens;
  for (int ch = 0; ch < num_chunks; ++ch) {
    tokens.clear();
    if (bos) tokens.push_back(*reference->tokenizer->bos_id());
    tokens.insert(tokens.end(), text.begin() + static_cast<ptrdiff_t>(ch) * per_chunk,
                  text.begin() + static_cast<ptrdiff_t>(ch + 1) * per_chunk);
    const int n = static_cast<int>(tokens.size());
    ForwardBatch batch;
    batch.add_sequence(tokens.data(), n, 0, table, kBlock, false);
    for (int t = 0; t < n; ++t) batch.logits_indices.push_back(t);
    reference_backend.forward(batch, ref_logits);
    std::vector<std::vector<double>> ref_rows(static_cast<size_t>(n));
    for (int t = 0; t < n; ++t) log_softmax(ref_logits.data() + static_cast<size_t>(t) * c.vocab_size, c.vocab_size, ref_rows[t]);
    for (int t = 0; t < n; ++t) reference_stats.add(ref_rows[t], ref_rows[t], t + 1 < n ? tokens[t + 1] : -1);
    for (Variant& v : variants) {
      v.backend->forward(batch, logits);
      for (int t = 0; t < n; ++t) {
        log_softmax(logits.data() + static_cast<size_t>(t) * c.vocab_size, c.vocab_size, other);
        v.stats.add(ref_rows[t], other, t + 1 < n ? tokens[t + 1] : -1);
      }
    }
    if (!json) std::fprintf(stderr, "\rheld-out chunk %d/%d", ch + 1, num_chunks);
  }
  if (!json) std::fputc('\n', stderr);

  if (!json)
    std::printf("model %s (%s), held-out %s: %d chunks of %d tokens; importance matrix %s\n"
                "KL(original || quantized) of the next-token distribution; original perplexity %.4f\n"
                "%-16s %8s %12s %12s %11s %12s\n",
                c.name.c_str(), model_path->c_str(), text_path.c_str(), num_chunks, chunk, importance_label.c_str(),
                reference_stats.perplexity(), "variant", "bits/w", "mean KL", "p99 KL", "top-1 same", "perplexity");
  for (const Variant& v : variants) {
    if (json)
      std::printf("{\"bench\":\"quant-quality\",\"type\":\"%s\",\"imatrix\":%s,\"gptq\":%s,\"bits_per_weight\":%.4f,\"mean_kl\":%.4e,"
                  "\"p99_kl\":%.4e,\"max_kl\":%.4e,\"top1_agreement\":%.5f,\"perplexity\":%.4f,\"original_perplexity\":%.4f,"
                  "\"positions\":%zu}\n",
                  v.type.c_str(), v.weighted ? "true" : "false", v.gptq ? "true" : "false", v.bits_per_weight, v.stats.mean_kl(),
                  v.stats.quantile_kl(0.99), v.stats.max_kl(), v.stats.top1(), v.stats.perplexity(),
                  reference_stats.perplexity(), v.stats.kl.size());
    else
      std::printf("%-16s %8.3f %12.4e %12.4e %10.2f%% %12.4f\n", v.label.c_str(), v.bits_per_weight, v.stats.mean_kl(),
                  v.stats.quantile_kl(0.99), 100.0 * v.stats.top1(), v.stats.perplexity());
  }
  if (keep.empty()) fs::remove_all(dir);
  return 0;
}

}  // namespace pagedchat::cli
