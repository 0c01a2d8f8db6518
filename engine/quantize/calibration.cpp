#include "engine/quantize/calibration.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/common/error.h"
#include "engine/quantize/importance_collector.h"

namespace pagedchat::quantize {

namespace {

// -log p(next) from one row of logits, in double.
double next_token_nll(const float* logits, int vocab, int32_t next) {
  double mx = -INFINITY;
  for (int i = 0; i < vocab; ++i) mx = std::max(mx, static_cast<double>(logits[i]));
  double sum = 0;
  for (int i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - mx);
  return mx + std::log(sum) - logits[next];
}

// The importance collector and, when asked for, the Hessian collector, on one backend.
class BothObservers final : public cpu::MatmulObserver {
 public:
  BothObservers(cpu::MatmulObserver* a, cpu::MatmulObserver* b) : a_(a), b_(b) {}
  void observe(const WeightMatrix& w, const float* x, int64_t num_rows) override {
    a_->observe(w, x, num_rows);
    if (b_) b_->observe(w, x, num_rows);
  }

 private:
  cpu::MatmulObserver* a_;
  cpu::MatmulObserver* b_;
};

}  // namespace

ImportanceMatrix measure_importance(const Model& model, const std::string& text, const CalibrationOptions& options,
                                    const std::function<void(const CalibrationProgress&)>& progress,
                                    const std::atomic<bool>* cancel) {
  CalibrationOptions o = options;
  o.hessians = false;
  return calibrate(model, text, o, progress, cancel).importance;
}

Calibration calibrate(const Model& model, const std::string& text, const CalibrationOptions& o,
                      const std::function<void(const CalibrationProgress&)>& progress,
                      const std::atomic<bool>* cancel) {
  const ModelConfig& c = model.config();
  if (o.chunk_tokens < 16) fail("a calibration chunk needs at least 16 tokens");
  if (o.chunk_tokens > c.context_length)
    fail("a chunk of %d tokens is past the model's context of %d", o.chunk_tokens, c.context_length);
  const std::vector<int32_t> tokens = model.tokenizer->encode(text, false, false);
  const bool bos = model.tokenizer->add_bos() && model.tokenizer->bos_id().has_value();
  const int text_per_chunk = o.chunk_tokens - (bos ? 1 : 0);
  int num_chunks = static_cast<int>(tokens.size()) / text_per_chunk;
  if (o.max_chunks > 0) num_chunks = std::min(num_chunks, o.max_chunks);
  if (num_chunks == 0)
    fail("the calibration text has %zu tokens, fewer than one chunk of %d", tokens.size(), o.chunk_tokens);

  CpuBackend backend(model.weights, o.num_threads);
  ImportanceCollector collector(model.weights);
  std::unique_ptr<HessianCollector> hessians;
  if (o.hessians) hessians = std::make_unique<HessianCollector>(model.weights, o.hessian_block, o.num_threads);
  BothObservers both(&collector, hessians.get());
  backend.set_matmul_observer(&both);
  constexpr int kBlock = 16;
  const int blocks = (o.chunk_tokens + kBlock - 1) / kBlock;
  backend.allocate_kv({c.num_layers, c.num_kv_heads, c.head_dim, blocks, kBlock});
  std::vector<int32_t> table(static_cast<size_t>(blocks));
  for (int i = 0; i < blocks; ++i) table[static_cast<size_t>(i)] = i;

  std::vector<int32_t> chunk;
  std::vector<float> logits;
  double nll = 0;
  int64_t predicted = 0;
  for (int i = 0; i < num_chunks; ++i) {
    if (cancel && cancel->load()) fail("cancelled");
    chunk.clear();
    if (bos) chunk.push_back(*model.tokenizer->bos_id());
    const auto first = tokens.begin() + static_cast<ptrdiff_t>(i) * text_per_chunk;
    chunk.insert(chunk.end(), first, first + text_per_chunk);
    const int n = static_cast<int>(chunk.size());
    ForwardBatch batch;
    batch.add_sequence(chunk.data(), n, 0, table, kBlock, false);
    for (int t = 0; t < n; ++t) batch.logits_indices.push_back(t);
    backend.forward(batch, logits);
    // The second half of each chunk, as llama.cpp's perplexity counts: every prediction there
    // has at least half a chunk of context.
    for (int t = n / 2; t + 1 < n; ++t, ++predicted)
      nll += next_token_nll(logits.data() + static_cast<size_t>(t) * c.vocab_size, c.vocab_size, chunk[t + 1]);
    if (progress) progress({i + 1, num_chunks, std::exp(nll / static_cast<double>(predicted))});
  }
  Calibration result;
  result.importance =
      collector.matrix({o.dataset_name}, static_cast<uint32_t>(num_chunks), static_cast<uint32_t>(o.chunk_tokens));
  if (hessians) result.hessians = hessians->take();
  return result;
}

}  // namespace pagedchat::quantize
