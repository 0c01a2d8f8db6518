#include "engine/quantize/quality_comparison.h"

#include <algorithm>
#include <filesystem>
#include <memory>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/common/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model.h"
#include "engine/quant/quant.h"
#include "engine/quantize/calibration.h"
#include "engine/quantize/hessian.h"
#include "engine/quantize/model_quantizer.h"
#include "engine/quantize/next_token_stats.h"
#include "engine/quantize/quantize_rows.h"

namespace pagedchat::quantize {

namespace {

namespace fs = std::filesystem;

// Shares of the whole run, for the progress fraction.
constexpr double kWidenShare = 0.05, kCalibrateShare = 0.25, kQuantizeShare = 0.40, kReadShare = 0.30;

// The weight type of the source's layer matrices: a quantized one is widened to F16 first.
GgmlType layer_matrix_type(const GgufFile& f) {
  for (const auto& t : f.tensors())
    if (t.shape.size() == 2 && t.name.compare(0, 4, "blk.") == 0 && may_quantize(t.name, t.shape)) return t.type;
  fail("the model has no layer matrices to quantize");
}

// All rows of a 2-D tensor as floats.
std::vector<float> tensor_floats(const GgufFile& f, const std::string& name) {
  const GgufTensorInfo* t = f.find_tensor(name);
  if (!t || t->shape.size() != 2) fail("tensor '%s' is missing or not a matrix", name.c_str());
  const int64_t cols = t->shape[0], rows = t->shape[1];
  std::vector<float> out(static_cast<size_t>(cols * rows));
  const size_t row_bytes = ggml_row_size(t->type, cols);
  const uint8_t* data = f.tensor_data(*t);
  for (int64_t r = 0; r < rows; ++r) dequantize_row(t->type, data + static_cast<size_t>(r) * row_bytes, out.data() + r * cols, cols);
  return out;
}

// The dense layer matrix whose loudest input channel stands furthest above the mean.
std::string loudest_matrix(const ImportanceMatrix& m, const GgufFile& source) {
  std::string best;
  double best_ratio = 0;
  for (const auto& [name, e] : m.entries) {
    if (e.counts.size() != 1 || e.counts[0] <= 0) continue;
    const GgufTensorInfo* t = source.find_tensor(name);
    if (!t || t->shape.size() != 2) continue;
    double sum = 0, top = 0;
    for (float s : e.sums) {
      sum += s;
      top = std::max(top, static_cast<double>(s));
    }
    const double ratio = sum > 0 ? top / (sum / static_cast<double>(e.sums.size())) : 0;
    if (ratio > best_ratio) best_ratio = ratio, best = name;
  }
  return best;
}

// Each column's share of the output error the rounding w -> q costs over the calibration
// tokens: sum over rows of e_c (H e)_c / tokens, e = w - q (which sums to the mean output error
// e H e^T; a column can be negative where its error cancels another's, as a GPTQ-style pass
// arranges). Without Hessians: the diagonal alone, e_c^2 times the column's activation.
std::vector<float> column_costs(const std::vector<float>& w, const std::vector<float>& q, const std::vector<float>& activation,
                                const HessianBlocks* h) {
  const size_t cols = activation.size(), rows = w.size() / cols;
  std::vector<double> cost(cols, 0.0), e(cols);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) e[c] = static_cast<double>(w[r * cols + c]) - q[r * cols + c];
    if (!h) {
      for (size_t c = 0; c < cols; ++c) cost[c] += e[c] * e[c] * activation[c];
      continue;
    }
    for (size_t b = 0; b < h->starts.size(); ++b) {
      const auto n = static_cast<size_t>(h->block_size(b)), first = static_cast<size_t>(h->starts[b]);
      const float* m = h->blocks[b].data();
      for (size_t i = 0; i < n; ++i) {
        double he = 0;
        for (size_t j = 0; j < n; ++j) he += m[i * n + j] * e[first + j];
        cost[first + i] += e[first + i] * he / static_cast<double>(h->tokens);
      }
    }
  }
  std::vector<float> out(cols);
  for (size_t c = 0; c < cols; ++c) out[c] = static_cast<float>(cost[c] / static_cast<double>(rows));
  return out;
}

}  // namespace

std::vector<size_t> ChannelPicture::by_loudness() const {
  std::vector<size_t> order(activation.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return activation[a] > activation[b]; });
  return order;
}

ChannelPicture::ErrorShare ChannelPicture::error_of(size_t variant) const {
  ErrorShare e;
  if (variant >= cost.size()) return e;
  for (float c : cost[variant]) e.total += c;
  const std::vector<size_t> order = by_loudness();
  for (size_t i = 0; i < loud_count(); ++i) e.loud += cost[variant][order[i]];
  return e;
}

QualityComparison compare_quantizations(const ComparisonOptions& o,
                                        const std::function<void(const ComparisonProgress&)>& progress,
                                        const std::atomic<bool>* cancel) {
  auto say = [&](const std::string& stage, double fraction) {
    if (cancel && cancel->load()) fail("cancelled");
    if (progress) progress({stage, fraction});
  };
  QualityComparison result;
  result.chunk = o.chunk;
  fs::create_directories(o.work_dir);
  std::vector<std::string> written;
  struct Cleanup {
    const std::vector<std::string>& files;
    bool keep;
    ~Cleanup() {
      if (keep) return;
      std::error_code ec;
      for (const auto& f : files) fs::remove(f, ec);
    }
  } cleanup{written, o.keep_files};

  // The original: the source, or the source widened to F16 when its weights are quantized.
  std::string original = o.source_path;
  {
    const GgufFile source = GgufFile::open(o.source_path);
    const GgmlType t = layer_matrix_type(source);
    result.source_type = std::string(ggml_type_traits(t).name);
    if (is_quantized(t)) {
      say("widening the " + result.source_type + " file to F16", 0);
      QuantizeOptions q;
      q.source_path = o.source_path;
      q.output_path = (fs::path(o.work_dir) / "original-F16.gguf").string();
      q.file_type = FileType::F16;
      q.allow_requantize = true;
      q.num_threads = o.num_threads;
      quantize_model(q, {}, cancel);
      written.push_back(q.output_path);
      original = q.output_path;
    }
  }
  auto reference = Model::load(original);
  const ModelConfig& c = reference->config();
  if (o.chunk > c.context_length) fail("a chunk of %d tokens is past the model's context of %d", o.chunk, c.context_length);

  // The importance matrix and the Hessians, in one reading of the calibration text.
  say("reading the calibration text", kWidenShare);
  CalibrationOptions co;
  co.chunk_tokens = o.chunk;
  co.max_chunks = o.calibration_chunks;
  co.num_threads = o.num_threads;
  co.hessians = o.gptq;
  co.dataset_name = o.calibration_name;
  Calibration calibration;
  if (o.gptq || !o.importance)
    calibration = calibrate(*reference, o.calibration_text, co, [&](const CalibrationProgress& p) {
      say("reading the calibration text", kWidenShare + kCalibrateShare * p.chunk / std::max(1, p.num_chunks));
    }, cancel);
  result.importance = o.importance ? *o.importance : std::move(calibration.importance);

  // The variants.
  const int kinds = o.gptq ? 3 : 2;
  const int total = static_cast<int>(o.types.size()) * kinds;
  std::vector<std::unique_ptr<Model>> models;
  for (FileType type : o.types) {
    for (int kind = 0; kind < kinds; ++kind) {
      VariantQuality v;
      v.type = type;
      v.importance = kind >= 1;
      v.gptq = kind == 2;
      v.label = std::string(file_type_info(type).name) + (v.gptq ? "+gptq" : v.importance ? "+imatrix" : "");
      say("quantizing " + v.label, kWidenShare + kCalibrateShare + kQuantizeShare * result.variants.size() / total);
      QuantizeOptions q;
      q.source_path = original;
      q.output_path = (fs::path(o.work_dir) / (v.label + ".gguf")).string();
      q.file_type = type;
      q.num_threads = o.num_threads;
      q.allow_requantize = true;  // (F16 widened from a quantized file: said in source_type)
      if (v.importance) {
        q.importance = &result.importance;
        q.importance_path = "measured on " + o.calibration_name;
      }
      if (v.gptq) q.hessians = &calibration.hessians;
      const QuantizeSummary s = quantize_model(q, {}, cancel);
      written.push_back(q.output_path);
      v.bits_per_weight = 8.0 * static_cast<double>(s.output_bytes) / static_cast<double>(s.num_elements);
      v.path = q.output_path;
      models.push_back(Model::load(q.output_path));
      result.variants.push_back(std::move(v));
    }
  }

  // The held-out text, every position of each chunk, against the original's distributions.
  const std::vector<int32_t> text = reference->tokenizer->encode(o.heldout_text, false, false);
  const bool bos = reference->tokenizer->add_bos() && reference->tokenizer->bos_id().has_value();
  const int per_chunk = o.chunk - (bos ? 1 : 0);
  const int num_chunks = std::min(static_cast<int>(text.size()) / per_chunk, (o.heldout_tokens + per_chunk - 1) / per_chunk);
  if (num_chunks == 0) fail("the held-out text has %zu tokens, fewer than one chunk of %d", text.size(), o.chunk);
  constexpr int kBlock = 16;
  const int blocks = (o.chunk + kBlock - 1) / kBlock;
  std::vector<int32_t> table(static_cast<size_t>(blocks));
  for (int i = 0; i < blocks; ++i) table[static_cast<size_t>(i)] = i;
  const KvCacheShape kv{c.num_layers, c.num_kv_heads, c.head_dim, blocks, kBlock};
  CpuBackend reference_backend(reference->weights, o.num_threads);
  reference_backend.allocate_kv(kv);
  std::vector<std::unique_ptr<CpuBackend>> backends;
  for (const auto& m : models) {
    backends.push_back(std::make_unique<CpuBackend>(m->weights, o.num_threads));
    backends.back()->allocate_kv(kv);
  }
  NextTokenStats reference_stats;
  std::vector<NextTokenStats> stats(models.size());
  std::vector<float> ref_logits, logits;
  std::vector<double> other;
  std::vector<int32_t> tokens;
  const double read_start = kWidenShare + kCalibrateShare + kQuantizeShare;
  for (int ch = 0; ch < num_chunks; ++ch) {
    say("reading the held-out text", read_start + kReadShare * ch / num_chunks);
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
    for (int t = 0; t < n; ++t) {
      log_softmax(ref_logits.data() + static_cast<size_t>(t) * c.vocab_size, c.vocab_size, ref_rows[t]);
      reference_stats.add(ref_rows[t], ref_rows[t], t + 1 < n ? tokens[t + 1] : -1);
    }
    for (size_t v = 0; v < backends.size(); ++v) {
      if (cancel && cancel->load()) fail("cancelled");
      backends[v]->forward(batch, logits);
      for (int t = 0; t < n; ++t) {
        log_softmax(logits.data() + static_cast<size_t>(t) * c.vocab_size, c.vocab_size, other);
        stats[v].add(ref_rows[t], other, t + 1 < n ? tokens[t + 1] : -1);
      }
    }
  }
  result.chunks = num_chunks;
  result.positions = static_cast<int>(reference_stats.kl.size());
  result.reference_perplexity = reference_stats.perplexity();
  for (size_t v = 0; v < stats.size(); ++v) {
    VariantQuality& q = result.variants[v];
    q.mean_kl = stats[v].mean_kl();
    q.p99_kl = stats[v].quantile_kl(0.99);
    q.max_kl = stats[v].max_kl();
    q.top1 = stats[v].top1();
    q.perplexity = stats[v].perplexity();
  }

  // Where the error sits, in the matrix with the loudest channel.
  const std::string tensor = loudest_matrix(result.importance, reference->weights.file);
  if (!tensor.empty()) {
    ChannelPicture& p = result.channels;
    p.tensor = tensor;
    p.activation = result.importance.column_weights(tensor);
    const std::vector<float> w = tensor_floats(reference->weights.file, tensor);
    const HessianBlocks* h = calibration.hessians.find(tensor);
    if (h && (h->cols != static_cast<int64_t>(p.activation.size()) || h->tokens == 0)) h = nullptr;
    p.full_hessian = h != nullptr;
    for (const auto& m : models) p.cost.push_back(column_costs(w, tensor_floats(m->weights.file, tensor), p.activation, h));
  }
  say("done", 1);
  return result;
}

}  // namespace pagedchat::quantize
