// The CPU forward pass's mixture-of-experts block (qwen3moe, gpt-oss): the router picks each token's
// experts, the batch's tokens are grouped by expert, and each expert chosen by any token runs
// once over all of its tokens, so its matrices are read once per step (through the same panels
// as a dense block's when they were packed), however many of the batch's sequences chose it.
#include <algorithm>
#include <cstring>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/vector_ops.h"

namespace pagedchat {
namespace {

constexpr int64_t kRowsPerTask = 16;

}  // namespace

void CpuBackend::moe_block(int l, int64_t n) {
  const ModelConfig& c = w_.config;
  const LayerWeights& L = w_.layers[l];
  const int k = c.num_experts_used, f = c.expert_ffn_dim;
  pool_.parallel_for(n, [&](int64_t t) {
    cpu::rms_norm(x_.data() + t * c.dim, L.ffn_norm.data(), xn_.data() + t * c.dim, c.dim, c.rms_eps);
  });
  router_logits_.resize(static_cast<size_t>(n) * c.num_experts);
  act_.prepare(xn_.data(), n, c.dim);
  cpu::matmul({{&L.router, router_logits_.data(), c.num_experts, packed_.find(L.router)}}, act_, n, pool_, precision_);
  if (!L.router_bias.empty())
    for (int64_t t = 0; t < n; ++t) cpu::add_inplace(router_logits_.data() + t * c.num_experts, L.router_bias.data(), c.num_experts);
  route_experts_.resize(static_cast<size_t>(n) * k);
  route_weights_.resize(static_cast<size_t>(n) * k);
  cpu::route_experts(router_logits_.data(), n, c, route_experts_.data(), route_weights_.data());
  cpu::group_by_expert(route_experts_.data(), n, k, c.num_experts, expert_groups_);

  // A token's weighted expert outputs are added into its row in the order of the experts' indices,
  // an order that depends on the token's own choice only: its result has the same bits whichever
  // other tokens chose its experts.
  expert_in_.resize(static_cast<size_t>(n) * c.dim);
  expert_out_.resize(static_cast<size_t>(n) * c.dim);
  std::fill(proj_.begin(), proj_.begin() + n * c.dim, 0.0f);
  const size_t row_bytes = sizeof(float) * static_cast<size_t>(c.dim);
  for (int e = 0; e < c.num_experts; ++e) {
    const int32_t rows = expert_groups_.count(e);
    if (rows == 0) continue;
    ++experts_run_;
    const int32_t* entries = expert_groups_.entries.data() + expert_groups_.offset[e];
    // The gather and the weighted add below touch each row once, rows of distinct tokens: split
    // over the threads in stretches of kRowsPerTask (a decode step's few rows stay on one).
    const int64_t tasks = (rows + kRowsPerTask - 1) / kRowsPerTask;
    pool_.parallel_for(tasks, [&](int64_t task) {
      for (int64_t i = task * kRowsPerTask; i < std::min<int64_t>(rows, (task + 1) * kRowsPerTask); ++i)
        std::memcpy(expert_in_.data() + static_cast<size_t>(i) * c.dim,
                    xn_.data() + static_cast<size_t>(entries[i] / k) * c.dim, row_bytes);
    });
    const ExpertWeights& E = L.experts[e];
    act_.prepare(expert_in_.data(), rows, c.dim);
    cpu::matmul({{&E.gate, gate_.data(), f, packed_.find(E.gate)}, {&E.up, up_.data(), f, packed_.find(E.up)}}, act_, rows,
                pool_, precision_);
    const bool biased = !L.expert_gate_bias.empty();
    pool_.parallel_for(rows, [&](int64_t i) {
      float* gate = gate_.data() + i * f;
      float* up = up_.data() + i * f;
      if (biased) {
        cpu::add_inplace(gate, L.expert_gate_bias.data() + static_cast<size_t>(e) * f, f);
        cpu::add_inplace(up, L.expert_up_bias.data() + static_cast<size_t>(e) * f, f);
      }
      if (c.ffn_activation == FfnActivation::kSwigluOai) cpu::swiglu_oai(gate, up, f);
      else cpu::swiglu(gate, up, f);
    });
    act_.prepare(gate_.data(), rows, f);
    cpu::matmul({{&E.down, expert_out_.data(), c.dim, packed_.find(E.down)}}, act_, rows, pool_, precision_);
    // The down projection's bias comes before the router's weight (ggml_add_id, then the mul).
    const float* down_bias = biased ? L.expert_down_bias.data() + static_cast<size_t>(e) * c.dim : nullptr;
    pool_.parallel_for(tasks, [&](int64_t task) {
      for (int64_t i = task * kRowsPerTask; i < std::min<int64_t>(rows, (task + 1) * kRowsPerTask); ++i) {
        const float weight = route_weights_[entries[i]];
        const float* y = expert_out_.data() + static_cast<size_t>(i) * c.dim;
        float* out = proj_.data() + static_cast<size_t>(entries[i] / k) * c.dim;
        if (down_bias)
          for (int d = 0; d < c.dim; ++d) out[d] += (y[d] + down_bias[d]) * weight;
        else
          for (int d = 0; d < c.dim; ++d) out[d] += y[d] * weight;
      }
    });
  }
  add_residual(L.post_ffn_norm, n);
}

}  // namespace pagedchat
