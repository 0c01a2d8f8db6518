// The scheduler's step: decodes, then prefill continuations, then new prompts; memory made by
// releasing parked sequences and preempting the latest arrivals (recompute).
#include "engine/scheduler/scheduler.h"

#include <algorithm>
#include <cassert>

namespace pagedchat {
namespace {

bool before(const SchedSequence* a, const SchedSequence* b) {
  return a->arrival != b->arrival ? a->arrival < b->arrival : a->id < b->id;
}

template <typename Container>
void insert_sorted(Container& c, SchedSequence* seq) {
  c.insert(std::upper_bound(c.begin(), c.end(), seq, before), seq);
}

// The chunk's tokens [start, start + n) that were computed before a preemption dropped them.
int32_t num_recomputed(const SchedSequence* seq, int32_t start, int32_t n) {
  return std::clamp(seq->num_recompute - start, 0, n);
}

// Whether a queue holds a sequence its client does not hold back (Engine::hold).
template <typename Container>
bool any_unheld(const Container& queue) {
  return std::any_of(queue.begin(), queue.end(), [](const SchedSequence* s) { return !s->held; });
}

bool is_scheduled(const ScheduledStep& step, const SchedSequence* seq) {
  return std::any_of(step.chunks.begin(), step.chunks.end(), [&](const ScheduledChunk& c) { return c.seq == seq; });
}

}  // namespace

Scheduler::Scheduler(SchedulerConfig config) : config_(config) {
  config_.max_batched_tokens = std::max(config_.max_batched_tokens, 1);
  config_.max_num_seqs = std::max(config_.max_num_seqs, 1);
}

void Scheduler::add_waiting(SchedSequence* seq) {
  assert(!seq->in_kv && seq->num_computed == 0);
  insert_sorted(waiting_, seq);
}

void Scheduler::add_running(SchedSequence* seq) {
  assert(seq->in_kv);
  insert_sorted(running_, seq);
}

void Scheduler::remove(SequenceId id) {
  auto same = [id](const SchedSequence* s) { return s->id == id; };
  running_.erase(std::remove_if(running_.begin(), running_.end(), same), running_.end());
  waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(), same), waiting_.end());
  swapped_.erase(std::remove_if(swapped_.begin(), swapped_.end(), same), swapped_.end());
}

bool Scheduler::has_work() const { return any_unheld(waiting_) || any_unheld(running_) || any_unheld(swapped_); }

ScheduledStep Scheduler::schedule(KvManager& kv) {
  ScheduledStep step;
  int32_t budget = config_.max_batched_tokens;
  swap_in(kv, step);
  schedule_running(kv, /*decode=*/true, budget, step);
  schedule_running(kv, /*decode=*/false, budget, step);
  // A step that had to preempt admits nothing new: the victims come back first.
  if (step.preempted.empty() && step.swapped_out.empty() && !any_unheld(swapped_)) schedule_waiting(kv, budget, step);
  step.num_tokens = config_.max_batched_tokens - budget;
  return step;
}

void Scheduler::schedule_running(KvManager& kv, bool decode, int32_t& budget, ScheduledStep& step) {
  const std::vector<SchedSequence*> order = running_;  // preemption edits running_
  for (SchedSequence* seq : order) {
    if (budget == 0) break;
    if (!seq->in_kv || seq->swapped) continue;  // preempted earlier in this step
    if (seq->held) continue;
    if (seq->prefilled != decode) continue;
    int32_t remaining = seq->num_remaining();
    if (remaining == 0) continue;  // its next token is not sampled yet
    int32_t n = decode ? 1 : std::min(remaining, budget);
    if (decode && seq->num_draft > 0) {
      // Drafts take the budget and the free blocks that are left, no more.
      int32_t keep = std::min(seq->num_draft, budget - 1);
      while (keep > 0 && kv.num_blocks_to_append(seq->id, 1 + keep) > kv.num_available_blocks()) --keep;
      drop_drafts(seq, keep);
      n = 1 + keep;
    }
    if (!make_room(kv, seq, kv.num_blocks_to_append(seq->id, n), step)) continue;
    std::vector<int64_t> slots;
    kv.append(seq->id, std::span<const int32_t>(seq->tokens).subspan(seq->num_computed, n), slots);
    step.chunks.push_back(
        {seq, seq->num_computed, n, decode, num_recomputed(seq, seq->num_computed, n), std::move(slots)});
    seq->num_computed += n;
    seq->prefilled = seq->num_remaining() == 0;
    budget -= n;
  }
}

// Makes num_blocks available for `seq`: releases parked sequences, then preempts running ones
// not yet scheduled in this step, latest arrival first; when even that is not enough, `seq`
// itself is preempted (swapped out when there is a host pool with room for it, else sent back
// to be recomputed) and false returned.
bool Scheduler::make_room(KvManager& kv, SchedSequence* seq, int32_t num_blocks, ScheduledStep& step) {
  if (num_blocks <= kv.num_available_blocks()) return true;
  // Victims are taken from the back: held sequences (their clients read nothing) go there, so
  // they go first, the latest arrival among the others next.
  std::vector<SequenceId> candidates, held;
  for (SchedSequence* s : running_)
    if (s != seq && !is_scheduled(step, s)) (s->held ? held : candidates).push_back(s->id);
  candidates.insert(candidates.end(), held.begin(), held.end());
  ReclaimPlan plan = kv.plan_reclaim(num_blocks, candidates, config_.preempt_mode);
  if (!plan.enough) {
    // Its own preemption follows the mode too: with room on the host, a sequence whose
    // neighbours were all scheduled first waits there rather than computing its tokens again.
    if (config_.preempt_mode == PreemptMode::swap && kv.can_swap_out(seq->id)) {
      kv.swap_out(seq->id);
      send_to_host(seq, step);
    } else {
      kv.preempt(seq->id);
      send_back(seq, step);
    }
    return false;
  }
  kv.apply(plan);
  step.reclaimed.insert(step.reclaimed.end(), plan.reclaim.begin(), plan.reclaim.end());
  for (SequenceId id : plan.preempt) {
    auto it = std::find_if(running_.begin(), running_.end(), [id](const SchedSequence* s) { return s->id == id; });
    assert(it != running_.end());
    send_back(*it, step);
  }
  for (SequenceId id : plan.swap_out) {
    auto it = std::find_if(running_.begin(), running_.end(), [id](const SchedSequence* s) { return s->id == id; });
    assert(it != running_.end());
    send_to_host(*it, step);
  }
  assert(num_blocks <= kv.num_available_blocks());
  return true;
}

void Scheduler::drop_drafts(SchedSequence* seq, int32_t keep) {
  if (keep >= seq->num_draft) return;
  seq->tokens.resize(seq->tokens.size() - static_cast<size_t>(seq->num_draft - keep));
  seq->num_draft = keep;
}

// A sequence the KV manager swapped out waits in host memory, ahead of later arrivals, to be
// swapped back in.
void Scheduler::send_to_host(SchedSequence* seq, ScheduledStep& step) {
  drop_drafts(seq, 0);
  running_.erase(std::find(running_.begin(), running_.end(), seq));
  seq->swapped = true;
  insert_sorted(swapped_, seq);
  step.swapped_out.push_back(seq->id);
}

// A preempted sequence waits again, ahead of later arrivals, to be recomputed.
void Scheduler::send_back(SchedSequence* seq, ScheduledStep& step) {
  drop_drafts(seq, 0);
  running_.erase(std::find(running_.begin(), running_.end(), seq));
  seq->in_kv = false;
  seq->num_recompute = std::max(seq->num_recompute, seq->num_computed);
  seq->num_computed = 0;
  seq->prefilled = false;
  insert_sorted(waiting_, seq);
  step.preempted.push_back(seq->id);
}

// Swapped sequences return, oldest first, while their blocks fit (before they are appended to
// in this step: the swap-in transfers run before the forward pass).
void Scheduler::swap_in(KvManager& kv, ScheduledStep& step) {
  for (auto it = swapped_.begin(); it != swapped_.end() && num_running() < config_.max_num_seqs;) {
    SchedSequence* seq = *it;
    if (seq->held) {  // stays in host memory until its client reads again
      ++it;
      continue;
    }
    if (!kv.can_swap_in(seq->id)) {
      // Parked sequences make way; running ones do not (they finish first).
      ReclaimPlan plan = kv.plan_reclaim(kv.num_blocks_to_swap_in(seq->id), {}, config_.preempt_mode);
      if (!plan.enough) break;
      kv.apply(plan);
      step.reclaimed.insert(step.reclaimed.end(), plan.reclaim.begin(), plan.reclaim.end());
    }
    kv.swap_in(seq->id);
    it = swapped_.erase(it);
    seq->swapped = false;
    insert_sorted(running_, seq);
    step.swapped_in.push_back(seq->id);
  }
}

void Scheduler::schedule_waiting(KvManager& kv, int32_t& budget, ScheduledStep& step) {
  for (auto it = waiting_.begin(); it != waiting_.end() && budget > 0 && num_running() < config_.max_num_seqs;) {
    SchedSequence* seq = *it;
    if (seq->held || seq->disk_wait) {  // a held preempted sequence, or one whose blocks are still read from disk, does not hold up the queue behind it
      ++it;
      continue;
    }
    PrefixHit hit = kv.find_prefix(seq->tokens, seq->cache_salt);
    auto chunk_len = [&] { return std::min(static_cast<int32_t>(seq->tokens.size()) - hit.num_tokens, budget); };
    int32_t n = chunk_len();
    if (kv.num_blocks_to_start(hit, n) > kv.num_available_blocks()) {
      // Parked sequences make way for a new prompt; running ones do not.
      ReclaimPlan plan = kv.plan_reclaim(kv.num_blocks_to_start(hit, n), {}, PreemptMode::recompute);
      if (!plan.enough) break;
      kv.apply(plan);
      step.reclaimed.insert(step.reclaimed.end(), plan.reclaim.begin(), plan.reclaim.end());
      hit = kv.find_prefix(seq->tokens, seq->cache_salt);
      n = chunk_len();
      // A prompt read from disk takes a fresh block for each staged block at once: what does not
      // fit now is left to compute, chunk by chunk, rather than hold up the queue.
      while (kv.num_blocks_to_start(hit, n) > kv.num_available_blocks() && !hit.staged.empty()) {
        const int32_t need = kv.num_blocks_to_start(hit, n);
        hit.staged.pop_back();
        hit.num_tokens -= kv.block_size();
        n = chunk_len();
        if (kv.num_blocks_to_start(hit, n) >= need) break;  // the chunk grew as much: it cannot fit either way
      }
      if (kv.num_blocks_to_start(hit, n) > kv.num_available_blocks()) break;
    }
    kv.start(seq->id, hit);
    std::vector<int64_t> slots;
    kv.append(seq->id, std::span<const int32_t>(seq->tokens).subspan(hit.num_tokens, n), slots);
    it = waiting_.erase(it);
    seq->in_kv = true;
    seq->num_computed = hit.num_tokens + n;
    seq->prefilled = seq->num_remaining() == 0;
    insert_sorted(running_, seq);
    step.chunks.push_back({seq, hit.num_tokens, n, false, num_recomputed(seq, hit.num_tokens, n), std::move(slots)});
    budget -= n;
  }
}

}  // namespace pagedchat
