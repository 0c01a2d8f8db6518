// The draft model's own decode loop over its own KV pool (see draft_model_drafter.h).
#include "engine/speculative/draft_model_drafter.h"

#include <algorithm>

#include "engine/backend/forward_batch.h"
#include "engine/common/error.h"
#include "engine/kv/kv_transfers.h"

namespace pagedchat {

struct DraftModelDrafter::Seq {
  Sampler sampler;
  explicit Seq(const SamplingParams& p) : sampler(p) {}
};

namespace {

double matrix_params(const ModelConfig& c) {
  const double attn = static_cast<double>(c.dim) * c.head_dim * (2.0 * c.num_heads + 2.0 * c.num_kv_heads);
  const double ffn = 3.0 * c.dim * c.ffn_dim;
  return c.num_layers * (attn + ffn) + static_cast<double>(c.vocab_size) * c.dim;
}

}  // namespace

double draft_token_cost(const ModelConfig& draft, const ModelConfig& target) {
  return std::clamp(matrix_params(draft) / std::max(matrix_params(target), 1.0), 0.0, 10.0);
}

DraftModelDrafter::DraftModelDrafter(std::shared_ptr<const Model> draft, std::unique_ptr<Backend> backend,
                                     const Model& target, int32_t num_blocks, int32_t block_size, double token_cost)
    : draft_(std::move(draft)),
      backend_(std::move(backend)),
      kv_(KvManagerConfig{std::max(num_blocks, 1), block_size, 0, 0x4472616674ull, {}}),
      token_cost_(token_cost) {
  const ModelConfig& d = draft_->config();
  const ModelConfig& t = target.config();
  if (d.vocab_size != t.vocab_size)
    fail("the draft model's vocabulary has %d tokens and the target's %d: a draft model must share its vocabulary",
         d.vocab_size, t.vocab_size);
  // Same size is not enough: the ids must mean the same text.
  for (int32_t id : {0, 1, 2, d.vocab_size / 2, d.vocab_size - 1})
    if (draft_->tokenizer->token_to_piece(id) != target.tokenizer->token_to_piece(id))
      fail("the draft model's token %d is not the target's: a draft model must share its vocabulary", id);
  backend_->allocate_kv({d.num_layers, d.num_kv_heads, d.head_dim, kv_.num_blocks(), block_size});
}

DraftModelDrafter::~DraftModelDrafter() = default;

void DraftModelDrafter::forget(SequenceId seq) {
  if (kv_.has_sequence(seq)) kv_.free(seq);
  seqs_.erase(seq);
}

// Brings the draft KV of job.seq to what it shares with job.tokens (but the last token, which
// the first draft step computes), and gives what must be computed. False: no room in the pool.
bool DraftModelDrafter::sync(DraftJob& job, std::vector<int32_t>& pending) {
  std::span<const int32_t> tokens = job.tokens;
  const auto len = static_cast<int32_t>(tokens.size());
  int32_t keep = 0;
  if (kv_.has_sequence(job.seq)) {
    std::vector<int32_t> stored = kv_.stored_tokens(job.seq);
    const auto limit = std::min<int32_t>(static_cast<int32_t>(stored.size()), len - 1);
    while (keep < limit && stored[static_cast<size_t>(keep)] == tokens[static_cast<size_t>(keep)]) ++keep;
    if (keep < static_cast<int32_t>(stored.size())) kv_.rewind(job.seq, keep);
  } else {
    PrefixHit hit = kv_.find_prefix(tokens.first(static_cast<size_t>(len - 1)));
    if (kv_.num_blocks_to_start(hit, len - hit.num_tokens) > kv_.num_available_blocks()) return false;
    kv_.start(job.seq, hit);
    keep = hit.num_tokens;
  }
  pending.assign(tokens.begin() + keep, tokens.end());
  // Room for the chunk and the k - 1 drafts after it.
  if (kv_.num_blocks_to_append(job.seq, static_cast<int32_t>(pending.size()) + job.max_tokens - 1) > kv_.num_available_blocks()) {
    forget(job.seq);
    return false;
  }
  if (!seqs_.count(job.seq)) seqs_.emplace(job.seq, std::make_unique<Seq>(*job.params));
  return true;
}

void DraftModelDrafter::propose(std::span<DraftJob> jobs) {
  std::vector<DraftJob*> active;
  std::vector<std::vector<int32_t>> chunks;
  for (DraftJob& job : jobs) {
    job.draft.clear();
    job.draft_probs.clear();
    if (job.max_tokens <= 0) continue;
    std::vector<int32_t> pending;
    if (!sync(job, pending)) continue;
    active.push_back(&job);
    chunks.push_back(std::move(pending));
  }
  // Step i computes each job's chunk (first its catch-up, then its last draft) and samples the
  // next draft; a job leaves once it has its max_tokens.
  while (!active.empty()) {
    run(active, chunks);
    std::vector<DraftJob*> still;
    std::vector<std::vector<int32_t>> next;
    for (DraftJob* job : active)
      if (static_cast<int32_t>(job->draft.size()) < job->max_tokens) {
        still.push_back(job);
        next.push_back({job->draft.back()});
      }
    active.swap(still);
    chunks.swap(next);
  }
}

// One forward pass of the draft model over each job's chunk, and one sampled draft each.
void DraftModelDrafter::run(std::vector<DraftJob*>& jobs, std::vector<std::vector<int32_t>>& chunks) {
  ForwardBatch batch;
  std::vector<int32_t> table;
  std::vector<int64_t> slots;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const int32_t start = kv_.num_tokens(jobs[i]->seq);
    slots.clear();
    kv_.append(jobs[i]->seq, chunks[i], slots);
    std::span<const int32_t> t = kv_.block_table(jobs[i]->seq);
    table.assign(t.begin(), t.end());
    batch.add_sequence(chunks[i].data(), static_cast<int32_t>(chunks[i].size()), start, table, slots, true);
  }
  for (const TransferBatch& tb : batch_transfers(kv_.take_transfers()))
    if (tb.kind == TransferKind::copy) backend_->copy_blocks(tb.pairs);
  backend_->forward(batch, logits_);
  const size_t vocab = static_cast<size_t>(draft_->config().vocab_size);
  std::vector<int32_t> history;
  for (size_t i = 0; i < jobs.size(); ++i) {
    DraftJob& job = *jobs[i];
    std::span<const float> row = std::span<const float>(logits_).subspan(i * vocab, vocab);
    Seq& seq = *seqs_.at(job.seq);
    history.assign(job.tokens.begin(), job.tokens.end());
    history.insert(history.end(), job.draft.begin(), job.draft.end());
    TokenProbs q;
    seq.sampler.distribution(row, history, q);
    if (job.params->temperature > 0.0f) {
      job.draft.push_back(q.draw(seq.sampler.next_uniform()));
      job.draft_probs.push_back(std::move(q));
    } else {
      job.draft.push_back(q.ids[0]);
    }
  }
}

}  // namespace pagedchat
