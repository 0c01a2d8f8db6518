#include "engine/engine/step_cost.h"

#include <algorithm>

#include "engine/engine/engine.h"

namespace pagedchat {
namespace {

double params(const WeightMatrix& m) { return static_cast<double>(m.rows) * static_cast<double>(m.cols); }
double bytes(const WeightMatrix& m) { return static_cast<double>(m.rows) * static_cast<double>(m.row_bytes); }

// Positions p in [start, start + n) each see min(p + 1, window) positions (window 0: all):
// their sum.
double positions_seen(int64_t start, int64_t n, int64_t window) {
  auto all = [](int64_t from, int64_t count) {  // sum of p + 1 over p in [from, from + count)
    return static_cast<double>(count) * static_cast<double>(2 * from + count + 1) / 2.0;
  };
  if (window <= 0) return all(start, n);
  const int64_t full = std::clamp<int64_t>(window - 1 - start, 0, n);  // positions before the window fills
  return all(start, full) + static_cast<double>(n - full) * static_cast<double>(window);
}

// The distinct positions a chunk's tokens see together: [max(0, start - window + 1), start + n).
double positions_read(int64_t start, int64_t n, int64_t window) {
  const int64_t end = start + n;
  return static_cast<double>(window <= 0 ? end : end - std::max<int64_t>(0, start - window + 1));
}

}  // namespace

StepCostModel::StepCostModel(const ModelWeights& w, int64_t kv_token_bytes) {
  const ModelConfig& c = w.config;
  for (const LayerWeights& L : w.layers) {
    for (const WeightMatrix* m : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down, &L.router}) {
      dense_params_ += params(*m);
      dense_bytes_ += bytes(*m);
    }
    if (!L.experts.empty()) {
      ++num_moe_layers_;
      const ExpertWeights& e = L.experts.front();  // every expert of a layer has the same shapes and types
      expert_params_ += params(e.gate) + params(e.up) + params(e.down);
      expert_bytes_ += bytes(e.gate) + bytes(e.up) + bytes(e.down);
    }
  }
  head_params_ = params(w.output);
  head_bytes_ = bytes(w.output);
  num_experts_ = c.num_experts;
  num_experts_used_ = c.num_experts_used;
  num_layers_ = c.num_layers;
  for (int l = 0; l < c.num_layers; ++l) num_local_layers_ += c.is_local_layer(l) ? 1 : 0;
  window_ = num_local_layers_ > 0 ? c.sliding_window : 0;
  kv_layer_token_bytes_ = c.num_layers > 0 ? static_cast<double>(kv_token_bytes) / c.num_layers : 0.0;
  attention_flops_per_position_ = 4.0 * c.num_heads * c.head_dim;  // 2 for q.k, 2 for p.v, per head dimension
}

StepCost StepCostModel::cost(const StepRecord& step) const {
  StepCost out;
  double tokens = 0, logits = 0;
  for (const StepRecord::Chunk& ch : step.chunks) {
    tokens += static_cast<double>(ch.num_tokens);
    logits += static_cast<double>(ch.num_logits);
    const int global = num_layers_ - num_local_layers_;
    const double seen = global * positions_seen(ch.start, ch.num_tokens, 0) +
                        num_local_layers_ * positions_seen(ch.start, ch.num_tokens, window_);
    const double read = global * positions_read(ch.start, ch.num_tokens, 0) +
                        num_local_layers_ * positions_read(ch.start, ch.num_tokens, window_);
    out.flops += attention_flops_per_position_ * seen;
    out.bytes_read += kv_layer_token_bytes_ * read;
  }
  if (tokens == 0) return out;
  out.flops += 2.0 * (dense_params_ * tokens + head_params_ * logits + expert_params_ * num_experts_used_ * tokens);
  out.bytes_read += dense_bytes_ + (logits > 0 ? head_bytes_ : 0.0);
  if (num_experts_ > 0) {
    // The experts the pass ran when the backend counted them (each layer's mean expert bytes
    // times their number); else as many as the tokens could choose.
    out.bytes_read += step.experts_run >= 0 ? expert_bytes_ / num_moe_layers_ * static_cast<double>(step.experts_run)
                                            : expert_bytes_ * std::min<double>(num_experts_, tokens * num_experts_used_);
  }
  return out;
}

}  // namespace pagedchat
