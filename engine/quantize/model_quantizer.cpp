#include "engine/quantize/model_quantizer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>

#include "engine/common/error.h"
#include "engine/common/thread_pool.h"
#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/quant/quant.h"
#include "engine/quantize/gptq.h"
#include "engine/quantize/output_file.h"
#include "engine/quantize/quantize_rows.h"

namespace pagedchat::quantize {

namespace {

// Elements of one tensor held as floats at a time (64 MiB), and rows per thread task.
constexpr int64_t kSlabElements = int64_t{16} << 20;
constexpr int64_t kRowsPerTask = 4;
// The version of the quantized formats' layouts a file declares (ggml's GGML_QNT_VERSION).
constexpr uint32_t kQuantizationVersion = 2;

std::string type_name(GgmlType t) { return std::string(ggml_type_traits(t).name); }

// llama-quantize writes a string override of at most 127 bytes.
std::string clipped(const std::string& s) { return s.substr(0, 127); }

// Whether llama-quantize demands an importance matrix for this tensor: Q2_K in a Q2_K_S mix
// (the embedding and the output aside) is unusable without one.
bool needs_importance(const PlannedTensor& p, FileType ft) {
  const std::string& name = p.source->name;
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight" || name == "output.weight") return false;
  return ft == FileType::Q2_K_S && p.type == GgmlType::Q2_K;
}

void check_plan(const std::vector<PlannedTensor>& plan, const QuantizeOptions& o) {
  for (const auto& p : plan) {
    if (!p.converted()) continue;
    if (!can_write(p.type)) fail("cannot write %s tensors (%s)", type_name(p.type).c_str(), p.source->name.c_str());
    if (is_quantized(p.source->type) && !o.allow_requantize)
      fail("tensor '%s' is already %s: quantizing a quantized model loses more than quantizing its 16-bit original "
           "(allow it with --allow-requantize)",
           p.source->name.c_str(), type_name(p.source->type).c_str());
    if (!o.importance && needs_importance(p, o.file_type))
      fail("%s needs an importance matrix (--imatrix): tensor '%s' would be Q2_K without one",
           std::string(file_type_info(o.file_type).name).c_str(), p.source->name.c_str());
  }
}

GgufHeader make_header(const GgufFile& source, const std::vector<PlannedTensor>& plan, const QuantizeOptions& o) {
  GgufHeader h;
  if (const GgufValue* a = source.find("general.alignment"); a && a->u != GgufHeader::kAlignment)
    fail("files with general.alignment %llu cannot be written yet (32 only)", (unsigned long long)a->u);
  // Every key in its place; the two that describe the new contents move to the end, and a
  // split file's keys go (the output is one file), as llama-quantize does.
  for (const std::string& key : source.keys()) h.set_encoded(key, source.find(key)->encoded);
  h.set_u32("general.quantization_version", kQuantizationVersion);
  h.set_u32("general.file_type", static_cast<uint32_t>(o.file_type));
  h.remove("split.no");
  h.remove("split.count");
  h.remove("split.tensors.count");
  if (o.importance) {
    h.set_string("quantize.imatrix.file", clipped(o.importance_path));
    if (!o.importance->datasets.empty()) h.set_string("quantize.imatrix.dataset", clipped(o.importance->datasets[0]));
    h.set_u32("quantize.imatrix.entries_count", static_cast<uint32_t>(o.importance->entries.size()));
    if (o.importance->chunk_count > 0) h.set_u32("quantize.imatrix.chunks_count", o.importance->chunk_count);
  }
  if (o.hessians) {
    char what[96];
    std::snprintf(what, sizeof what, "GPTQ-style error correction, dampening %g", o.gptq_damp);
    h.set_string("quantize.gptq", what);
  }
  for (const auto& p : plan) h.add_tensor(p.source->name, p.type, p.source->shape);
  return h;
}

// The importance weights for one tensor ([matrices][cols]), empty when there are none.
std::vector<float> importance_for(const PlannedTensor& p, const QuantizeOptions& o, QuantizeSummary& summary) {
  if (!o.importance || !is_quantized(p.type)) return {};
  std::vector<float> w = o.importance->column_weights(p.source->name);
  const int64_t cols = p.source->shape[0];
  const int64_t matrices = p.source->num_rows() / p.source->shape[1];
  if (w.empty()) {
    // As llama-quantize: a type unusable without importance weights is refused, not written plain.
    if (needs_importance(p, o.file_type))
      fail("the importance matrix has no entry for tensor '%s', which %s needs", p.source->name.c_str(),
           std::string(file_type_info(o.file_type).name).c_str());
    ++summary.without_importance;
    return w;
  }
  if (static_cast<int64_t>(w.size()) != cols * matrices) {
    // An embedding is looked up, not multiplied: a mismatched entry for it is ignored, as
    // llama-quantize does; anything else means the matrix belongs to another model.
    if (p.source->name == "token_embd.weight" || p.source->name == "per_layer_token_embd.weight") return {};
    fail("the importance matrix has %zu values for tensor '%s', which needs %lld: it was made for another model",
         w.size(), p.source->name.c_str(), (long long)(cols * matrices));
  }
  return w;
}

class Converter {
 public:
  Converter(const GgufFile& source, OutputFile& out, ThreadPool& pool, const std::atomic<bool>* cancel)
      : source_(source), out_(out), pool_(pool), cancel_(cancel) {}

  // Streams one tensor's bytes, converted or copied; calls on_bytes(source bytes) per slab.
  // gptq: the tensor's GPTQ-style pass, or nullptr to round each row alone.
  void write(const PlannedTensor& p, const std::vector<float>& importance, const GptqTensor* gptq,
             const std::function<void(uint64_t)>& on_bytes) {
    const GgufTensorInfo& t = *p.source;
    const uint8_t* src = source_.tensor_data(t);
    if (!p.converted()) {
      constexpr uint64_t kCopySlab = 64 << 20;
      for (uint64_t off = 0; off < t.num_bytes; off += kCopySlab) {
        check_cancel();
        const uint64_t n = std::min(kCopySlab, t.num_bytes - off);
        out_.write(src + off, n);
        on_bytes(n);
      }
      return;
    }
    const int64_t cols = t.shape[0], rows = t.num_rows(), rows_per_matrix = t.shape[1];
    const size_t src_row = ggml_row_size(t.type, cols), dst_row = ggml_row_size(p.type, cols);
    const int64_t slab_rows = std::max<int64_t>(1, std::min(rows, kSlabElements / cols));
    floats_.resize(static_cast<size_t>(slab_rows * cols));
    bytes_.resize(static_cast<size_t>(slab_rows) * dst_row);
    for (int64_t first = 0; first < rows; first += slab_rows) {
      check_cancel();
      const int64_t n = std::min(slab_rows, rows - first);
      std::atomic<int64_t> bad_row{-1};
      const int64_t tasks = (n + kRowsPerTask - 1) / kRowsPerTask;
      pool_.parallel_for(tasks, [&](int64_t task) {
        for (int64_t r = task * kRowsPerTask; r < std::min(n, (task + 1) * kRowsPerTask); ++r) {
          float* x = floats_.data() + r * cols;
          dequantize_row(t.type, src + static_cast<size_t>(first + r) * src_row, x, cols);
          bool finite = true;
          for (int64_t c = 0; c < cols; ++c) finite &= std::isfinite(x[c]);
          if (!finite) {
            bad_row.store(first + r);
            continue;
          }
          const int64_t matrix = (first + r) / rows_per_matrix;
          const float* w = importance.empty() ? nullptr : importance.data() + matrix * cols;
          uint8_t* dst = bytes_.data() + static_cast<size_t>(r) * dst_row;
          if (gptq)
            gptq->quantize_row(x, dst, w);
          else
            quantize_rows(p.type, x, dst, 1, cols, w);
        }
      });
      if (bad_row.load() >= 0)
        fail("tensor '%s' holds a value that is not finite (row %lld): the source file is damaged", t.name.c_str(),
             (long long)bad_row.load());
      out_.write(bytes_.data(), static_cast<size_t>(n) * dst_row);
      on_bytes(static_cast<uint64_t>(n) * src_row);
    }
  }

 private:
  void check_cancel() const {
    if (cancel_ && cancel_->load()) fail("cancelled");
  }
  const GgufFile& source_;
  OutputFile& out_;
  ThreadPool& pool_;
  const std::atomic<bool>* cancel_;
  std::vector<float> floats_;
  std::vector<uint8_t> bytes_;
};

// The GPTQ-style pass for a converted dense matrix the Hessians cover whose blocks the type's
// blocks tile; nullptr otherwise (rounded row by row). The factors are kept for the other
// matrices of the same input (Q, K and V; gate and up), a layer's worth at a time.
class GptqPasses {
 public:
  explicit GptqPasses(const QuantizeOptions& o) : o_(o) {}
  std::unique_ptr<GptqTensor> pass_for(const PlannedTensor& p) {
    if (!o_.hessians || !p.converted() || !is_quantized(p.type) || p.source->shape.size() != 2) return nullptr;
    const HessianBlocks* h = o_.hessians->find(p.source->name);
    if (!h || h->cols != p.source->shape[0] || h->tokens == 0) return nullptr;
    const int64_t group = ggml_type_traits(p.type).block_size;
    for (size_t b = 0; b < h->starts.size(); ++b)
      if (h->block_size(b) % group != 0) return nullptr;
    auto it = factors_.find(h);
    if (it == factors_.end()) {
      if (factors_.size() >= kLeadersPerLayer) factors_.clear();
      it = factors_.emplace(h, GptqFactors::of(*h, o_.gptq_damp)).first;
    }
    return std::make_unique<GptqTensor>(*h, it->second, p.type);
  }

 private:
  static constexpr size_t kLeadersPerLayer = 4;  // attn_q, attn_output, ffn_gate, ffn_down
  const QuantizeOptions& o_;
  std::map<const HessianBlocks*, GptqFactors> factors_;
};

QuantizeSummary summarize(std::vector<PlannedTensor> plan) {
  QuantizeSummary s;
  for (const auto& p : plan) {
    s.source_bytes += p.source->num_bytes;
    s.num_elements += p.source->num_elements();
    s.fallbacks += p.fell_back ? 1 : 0;
  }
  s.plan = std::move(plan);
  return s;
}

}  // namespace

QuantizeSummary plan_model(const QuantizeOptions& options) {
  const GgufFile source = GgufFile::open(options.source_path);
  PlanOptions plan_options;
  plan_options.has_importance = options.importance != nullptr;
  QuantizeSummary s = summarize(plan_tensors(source, options.file_type, plan_options));
  s.output_bytes = make_header(source, s.plan, options).file_size();
  return s;
}

QuantizeSummary quantize_model(const QuantizeOptions& options,
                               const std::function<void(const QuantizeProgress&)>& progress,
                               const std::atomic<bool>* cancel) {
  const GgufFile source = GgufFile::open(options.source_path);
  PlanOptions plan_options;
  plan_options.has_importance = options.importance != nullptr;
  QuantizeSummary summary = summarize(plan_tensors(source, options.file_type, plan_options));
  check_plan(summary.plan, options);
  const GgufHeader header = make_header(source, summary.plan, options);

  ThreadPool pool(options.num_threads);
  OutputFile out(options.output_path);
  out.write(header.encode());
  Converter converter(source, out, pool, cancel);
  GptqPasses passes(options);
  QuantizeProgress state;
  state.num_tensors = summary.plan.size();
  state.source_bytes_total = summary.source_bytes;
  for (size_t i = 0; i < summary.plan.size(); ++i) {
    const PlannedTensor& p = summary.plan[i];
    state.tensor = i;
    state.tensor_name = p.source->name;
    if (progress) progress(state);
    const std::vector<float> importance = p.converted() ? importance_for(p, options, summary) : std::vector<float>{};
    const std::unique_ptr<GptqTensor> gptq = passes.pass_for(p);
    summary.gptq_tensors += gptq ? 1 : 0;
    converter.write(p, importance, gptq.get(), [&](uint64_t bytes) {
      state.source_bytes_done += bytes;
      if (progress) progress(state);
    });
    out.write_zeros(header.padding_after(i));
    // Done with this tensor's source pages: handed back, so resident memory stays near one
    // tensor and a slab however large the model (they are the file's, read again if needed).
    source.release_pages(source.tensor_data(*p.source), p.source->num_bytes);
  }
  summary.output_bytes = out.bytes_written();
  out.commit();
  return summary;
}

}  // namespace pagedchat::quantize
