// Speculative decoding inside the engine's step: drafts proposed for decoding sequences before
// the schedule, verified after the forward pass (see docs/DESIGN.md, "Speculative decoding").
#include <algorithm>
#include <cassert>
#include <optional>

#include "engine/engine/engine.h"
#include "engine/engine/engine_live.h"
#include "engine/speculative/rejection.h"

namespace pagedchat {

// Before the schedule: each decoding sequence (its last sampled token not yet computed) may get
// drafted tokens after it, which the scheduler computes in the same chunk. How many comes from
// the speculation plan (the acceptance of each sequence's drafts, the batch, the drafter's cost)
// and what fits: max_tokens, the context, the step's token budget beyond one token per decode.
void Engine::propose_drafts() {
  drafted_.clear();
  Drafter* drafter = config_.drafter.get();
  if (!drafter) return;
  std::vector<Live*> decoding;
  for (auto& [id, l] : live_) {
    const SchedSequence& s = l->s;
    // A sequence that jumps forward under its grammar is not drafted: the two would append
    // different tokens for the same text, and the output would depend on the drafter.
    // Nor one still thinking under a grammar or a thinking budget (the verification does not
    // follow where the thinking ends).
    const bool jumps = (l->matcher && l->params.jump_forward) ||
                       (l->in_reasoning && (l->matcher || l->params.reasoning_budget >= 0));
    if (s.in_kv && !s.swapped && !s.held && s.prefilled && s.num_remaining() == 1 && l->num_to_fork == 0 && !l->beam && !jumps)
      decoding.push_back(l.get());
  }
  if (decoding.empty()) return;
  std::sort(decoding.begin(), decoding.end(), [](const Live* a, const Live* b) { return a->s.id < b->s.id; });
  const auto num_decoding = static_cast<int32_t>(decoding.size());
  const int32_t budget = config_.max_batched_tokens - num_decoding;
  if (budget <= 0) return;

  std::vector<DraftJob> jobs;
  std::vector<Live*> owners;
  for (Live* l : decoding) {
    const auto len = static_cast<int64_t>(l->s.tokens.size());
    const int64_t cap = std::min<int64_t>({config_.speculation.max_draft_tokens, l->params.max_tokens - l->num_generated,
                                           config_.max_context - len});
    if (cap <= 0) continue;
    DraftJob job;
    job.seq = l->s.id;
    job.tokens = l->s.tokens;
    job.max_tokens = static_cast<int32_t>(cap);
    job.params = &l->params;
    jobs.push_back(std::move(job));
    owners.push_back(l);
  }
  if (jobs.empty()) return;

  std::vector<DraftCandidate> candidates(jobs.size());
  const double draft_cost = drafter->token_cost();
  std::vector<int32_t> k;
  if (draft_cost == 0.0) {
    // Free to propose: look first, then verify what is worth it.
    drafter->propose(jobs);
    for (size_t i = 0; i < jobs.size(); ++i)
      candidates[i] = {owners[i]->acceptance.rate(), static_cast<int32_t>(jobs[i].draft.size())};
    k = plan_draft_lengths(candidates, num_decoding, config_.speculation, draft_cost, budget);
  } else {
    // Drafting costs: decide how much to ask for, then ask only that.
    for (size_t i = 0; i < jobs.size(); ++i) candidates[i] = {owners[i]->acceptance.rate(), jobs[i].max_tokens};
    k = plan_draft_lengths(candidates, num_decoding, config_.speculation, draft_cost, budget);
    std::vector<DraftJob> asked;
    std::vector<size_t> which;
    for (size_t i = 0; i < jobs.size(); ++i)
      if (k[i] > 0) {
        jobs[i].max_tokens = k[i];
        asked.push_back(std::move(jobs[i]));
        which.push_back(i);
      }
    if (!asked.empty()) drafter->propose(asked);
    for (size_t j = 0; j < which.size(); ++j) jobs[which[j]] = std::move(asked[j]);
  }

  for (size_t i = 0; i < jobs.size(); ++i) {
    Live& l = *owners[i];
    const int32_t n = std::min<int32_t>(k[i], static_cast<int32_t>(jobs[i].draft.size()));
    if (n <= 0) {
      // A proposal the plan declined: its estimate fades back toward even, so it is tried again.
      if (!jobs[i].draft.empty() || draft_cost > 0.0) l.acceptance.fade();
      continue;
    }
    l.s.tokens.insert(l.s.tokens.end(), jobs[i].draft.begin(), jobs[i].draft.begin() + n);
    l.s.num_draft = n;
    l.draft_probs.clear();
    if (!jobs[i].draft_probs.empty())
      l.draft_probs.assign(jobs[i].draft_probs.begin(), jobs[i].draft_probs.begin() + n);
    drafted_.push_back(l.s.id);
  }
}

// After the forward: rows[i] are the target's logits after the chunk's i-th token (the last
// sampled one, then each draft). Each draft is kept or replaced by the rejection rule, in order,
// up to the first replacement; with every draft kept the last row gives one more token. The K/V
// of rejected drafts is cut off (rewind: their blocks freed, the pool view sees the events), and
// the tokens go out one by one exactly as plain decoding emits them.
void Engine::verify_drafts(Live& live, const ScheduledChunk& c, std::span<const float> rows) {
  const size_t vocab = static_cast<size_t>(model_.config().vocab_size);
  SchedSequence& s = live.s;
  const int32_t k = s.num_draft;
  const int32_t base = c.start + 1;  // the first draft's index; tokens [0, base) are the sequence's
  assert(k > 0 && rows.size() == static_cast<size_t>(k + 1) * vocab);
  const std::vector<int32_t> drafts(s.tokens.begin() + base, s.tokens.end());
  std::vector<int32_t> out;  // the drafts kept, then the target's own token
  // Under a grammar each row is masked as plain decoding would mask it there: by the grammar's
  // state after the drafts before it (so a draft the grammar forbids has no probability and
  // is replaced). The verification stops where the reply ends (the grammar whole, or EOS).
  std::optional<grammar::GrammarMatcher> state = live.matcher;
  bool dead_end = false;
  for (int32_t i = 0; i <= k; ++i) {
    std::span<const float> row = rows.subspan(static_cast<size_t>(i) * vocab, vocab);
    std::span<const int32_t> history = std::span<const int32_t>(s.tokens).first(static_cast<size_t>(base + i));
    const uint64_t* allowed = nullptr;
    if (state) {
      const grammar::TokenMask& mask = allowed_tokens(*state);
      if (mask.count() == 0) {
        dead_end = true;
        break;
      }
      allowed = mask.words.data();
    }
    if (i == k) {
      out.push_back(live.sampler.sample(row, history, allowed));
      break;
    }
    live.sampler.distribution(row, history, target_probs_, allowed);
    const TokenProbs* q = live.draft_probs.empty() ? nullptr : &live.draft_probs[static_cast<size_t>(i)];
    const int32_t y = accept_or_resample(target_probs_, drafts[static_cast<size_t>(i)], q, live.sampler, residual_);
    out.push_back(y);
    if (y != drafts[static_cast<size_t>(i)]) break;
    if (state && (model_.tokenizer->is_eog(y) || !state->accept(model_.tokenizer->token_to_piece(y)) || state->finished())) break;
  }
  // The drafts kept: the run of out that matches them. out is those and the target's own token,
  // or, where the reply ended (or met a dead end) on a kept draft, those alone.
  const auto taken = static_cast<int32_t>(out.size());
  int32_t accepted = 0;
  while (accepted < std::min(k, taken) && out[static_cast<size_t>(accepted)] == drafts[static_cast<size_t>(accepted)]) ++accepted;
  counters_.num_draft_tokens += k;
  counters_.num_accepted_tokens += accepted;
  live.spec.drafted += k;
  live.spec.accepted += accepted;
  live.acceptance.observe(k, accepted);

  s.tokens.resize(static_cast<size_t>(base));
  s.num_draft = 0;
  live.draft_probs.clear();
  if (kv_.num_tokens(s.id) > base + accepted) kv_.rewind(s.id, base + accepted);
  for (int32_t j = 0; j < taken; ++j) {
    s.num_computed = base + j;  // before out[j] goes out, the K/V of every token before it is stored
    if (!take_token(live, out[static_cast<size_t>(j)], rows.subspan(static_cast<size_t>(j) * vocab, vocab))) return;
  }
  if (dead_end) return grammar_dead_end(live);
  assert(s.num_remaining() == 1 && kv_.num_tokens(s.id) == s.num_computed);
}

// Drafts the scheduler left out of the step (no budget, no room, or a sequence it did not run)
// go: the sequence decodes plainly next time.
void Engine::drop_unverified_drafts() {
  for (SequenceId id : drafted_) {
    auto it = live_.find(id);
    if (it == live_.end()) continue;
    Live& l = *it->second;
    if (l.s.num_draft > 0) {
      l.s.tokens.resize(l.s.tokens.size() - static_cast<size_t>(l.s.num_draft));
      l.s.num_draft = 0;
    }
    l.draft_probs.clear();
  }
  drafted_.clear();
}

}  // namespace pagedchat
