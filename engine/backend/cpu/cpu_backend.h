#pragma once
// The CPU backend: the Llama forward pass over a flattened batch with a paged KV pool (f16 by
// default, f32 or q8_0 on request), quantized matmuls and attention spread over a thread pool.

#include <memory>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cpu/cpu_matmul.h"
#include "engine/backend/cpu/expert_routing.h"
#include "engine/backend/cpu/kv_pool.h"
#include "engine/backend/cpu/rope.h"
#include "engine/common/thread_pool.h"
#include "engine/model/model_weights.h"

namespace pagedchat {

class CpuBackend final : public Backend {
 public:
  // weights must outlive the backend. num_threads 0 = all cores. progress: see PackedWeights.
  // Throws Error when the model's head size does not suit the attention kernels or the KV type.
  CpuBackend(const ModelWeights& weights, int num_threads, KvType kv_type = KvType::F16,
             cpu::MatmulPrecision precision = cpu::MatmulPrecision::kQuantizedActivations,
             const LoadProgress& progress = {});

  std::string_view name() const override { return "cpu"; }
  void allocate_kv(const KvCacheShape& shape) override;
  const KvCacheShape& kv_shape() const override { return kv_.shape(); }
  uint64_t kv_block_bytes(int32_t block_size) const override;
  KvType kv_type() const { return kv_type_; }
  void forward(const ForwardBatch& batch, std::vector<float>& logits) override;
  void copy_blocks(std::span<const BlockCopy> copies) override;
  void allocate_host_kv(int num_blocks) override;
  void swap_out(std::span<const BlockCopy> pairs) override;
  void swap_in(std::span<const BlockCopy> pairs) override;
  std::string kv_layout() const override;
  int64_t experts_run_last_forward() const override { return w_.config.is_moe() ? experts_run_ : -1; }
  void read_block(int32_t block, std::span<uint8_t> out) const override;
  void write_block(int32_t block, std::span<const uint8_t> bytes) override;

  int num_threads() const { return pool_.num_threads(); }
  // Shows every matmul's input to `observer` (nullptr: none) from the next forward on.
  void set_matmul_observer(cpu::MatmulObserver* observer) { act_.set_observer(observer); }
  // Bytes of the backend's own copies of the weights, panels and rows (0 with float activations).
  size_t packed_bytes() const { return packed_.bytes(); }

 private:
  void attention_block(const ForwardBatch& batch, int layer);
  void ffn_block(int layer, int64_t num_tokens);
  // A mixture-of-experts layer's feed-forward block (cpu_backend_moe.cpp).
  void moe_block(int layer, int64_t num_tokens);
  // x += the block output in proj_, put through post_norm first when it is not empty.
  void add_residual(const std::vector<float>& post_norm, int64_t num_tokens);

  const ModelWeights& w_;
  ThreadPool pool_;
  KvType kv_type_;
  cpu::MatmulPrecision precision_;
  cpu::PackedWeights packed_;  // empty with float activations
  cpu::KvPool kv_;
  cpu::KvPool host_kv_;  // swapped-out blocks, same layout
  cpu::PreparedActivations act_;
  // Scratch, sized per batch: [num_tokens, width]
  std::vector<float> x_, xn_, q_, k_, v_, attn_, proj_, gate_, up_;
  // Mixture of experts: router logits [num_tokens, experts], each token's experts and weights
  // [num_tokens, experts used], one expert's rows in and out [its tokens, dim].
  std::vector<float> router_logits_, route_weights_, expert_in_, expert_out_;
  std::vector<int32_t> route_experts_;
  cpu::ExpertGroups expert_groups_;
  int64_t experts_run_ = 0;  // in the last forward pass, summed over layers
  std::vector<cpu::RopeAngles> rope_;        // [num_tokens]
  std::vector<cpu::RopeAngles> rope_local_;  // [num_tokens] of local (sliding-window) layers
  const std::vector<float>* rope_inv_freq_ = nullptr;  // the global layers', chosen for the KV's context
};

}  // namespace pagedchat
