#pragma once
// A draft model: a second, smaller model with the target's vocabulary proposes the next k
// tokens by decoding them itself, on its own backend and its own paged KV pool. Each
// sequence's draft KV follows the target's tokens: at each proposal it is cut back (rewind) to
// what it shares with them, the rest (the tokens accepted since, the target's own token) is
// computed in one chunk, then k - 1 single-token steps draft the rest, every sequence batched
// together. A sampling target gets drafts sampled from the draft model with the same settings,
// and their distributions for the rejection rule.

#include <memory>
#include <unordered_map>

#include "engine/backend/backend.h"
#include "engine/kv/kv_manager.h"
#include "engine/model/model.h"
#include "engine/speculative/drafter.h"

namespace pagedchat {

class DraftModelDrafter final : public Drafter {
 public:
  // The draft pool has num_blocks blocks of block_size tokens; token_cost: see Drafter.
  // Throws Error if the draft's vocabulary is not the target's.
  DraftModelDrafter(std::shared_ptr<const Model> draft, std::unique_ptr<Backend> backend, const Model& target,
                    int32_t num_blocks, int32_t block_size, double token_cost);
  ~DraftModelDrafter() override;

  const char* name() const override { return "draft model"; }
  void propose(std::span<DraftJob> jobs) override;
  void forget(SequenceId seq) override;
  double token_cost() const override { return token_cost_; }

 private:
  struct Seq;
  bool sync(DraftJob& job, std::vector<int32_t>& pending);
  void run(std::vector<DraftJob*>& jobs, std::vector<std::vector<int32_t>>& chunks);

  std::shared_ptr<const Model> draft_;
  std::unique_ptr<Backend> backend_;
  KvManager kv_;
  double token_cost_;
  std::unordered_map<SequenceId, std::unique_ptr<Seq>> seqs_;
  std::vector<float> logits_;
};

// The fraction of a decode step of `target` that one token of `draft` costs, taken as the
// ratio of their matrix parameters (decode at small batches reads every weight once a step).
double draft_token_cost(const ModelConfig& draft, const ModelConfig& target);

}  // namespace pagedchat
