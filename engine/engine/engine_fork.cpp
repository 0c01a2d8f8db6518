// The engine's fork, rewind and release of sequences between steps (the commands' side that
// works on the KV manager's sequences): a parked sequence forked or cut at any token, a running
// one forked as another sample.
#include <algorithm>
#include <cassert>

#include "engine/engine/engine.h"
#include "engine/engine/engine_live.h"
#include "engine/sample/sampler.h"

namespace pagedchat {
namespace {

// The sampler seed of a running sequence's fork: splitmix64 of the parent's seed and the
// child's id. Not seed + i as for a request's n samples, which could collide with a fork's.
uint64_t fork_seed(uint64_t parent_seed, SequenceId child) {
  uint64_t z = parent_seed ^ (static_cast<uint64_t>(child) * 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

// Runs between steps (from apply_commands), so no append of this step has happened yet: the
// KV manager holds exactly the parent's computed tokens, as fork() requires.
void Engine::fork_sequence(SequenceId parent, SequenceId child, int32_t at_token) {
  if (parked_.count(parent)) return fork_parked(parent, child, at_token);
  auto it = live_.find(parent);
  if (it == live_.end()) return fork_error(parent, child, "it is neither running nor parked (unknown, finished, released or reclaimed)");
  if (at_token >= 0) return fork_error(parent, child, "it is running: a running sequence forks at its latest token only");
  const SchedSequence& s = it->second->s;
  if (s.swapped) return fork_error(parent, child, "it is swapped out to host memory; fork it once it runs again");
  // A reply whose grammar's forced tokens wait to be computed (jump-forward) forks as well: the
  // child computes them too.
  const bool jumping = s.in_kv && !s.prefilled && s.num_computed >= it->second->num_prompt && s.num_draft == 0;
  if (!s.in_kv || (!s.prefilled && !jumping))
    return fork_error(parent, child, "its prompt is not computed yet (waiting, prefilling, or recomputing after preemption)");
  fork_running(*it->second, child);
}

// The error goes to the child's id only (request -1): the parent's request has not failed.
void Engine::fork_error(SequenceId parent, SequenceId child, const std::string& why) {
  sequence_error(child, "cannot fork sequence " + std::to_string(parent) + ": " + why);
}

void Engine::sequence_error(SequenceId seq, const std::string& message) {
  EngineEvent e;
  e.kind = EngineEventKind::error;
  e.seq = seq;
  e.reason = message;
  publish(e);
}

void Engine::fork_parked(SequenceId parent, SequenceId child, int32_t at_token) {
  const int32_t stored = kv_.num_tokens(parent);
  if (at_token == 0 || at_token < -1 || at_token > stored)
    return fork_error(parent, child, "it holds " + std::to_string(stored) + " tokens; a fork at token " + std::to_string(at_token) +
                                         " must be within 1.." + std::to_string(stored));
  kv_.fork(parent, child);
  if (at_token > 0) kv_.rewind(child, at_token);
  kv_.park(child);
  parked_.insert(child);
}

void Engine::rewind_parked(SequenceId seq, int32_t num_tokens) {
  if (!parked_.count(seq))
    return sequence_error(seq, "cannot rewind sequence " + std::to_string(seq) + ": it is not parked (running, finished, released or reclaimed)");
  const int32_t stored = kv_.num_tokens(seq);
  if (num_tokens < 0 || num_tokens > stored)
    return sequence_error(seq, "cannot rewind sequence " + std::to_string(seq) + " to " + std::to_string(num_tokens) +
                                   " tokens: it holds " + std::to_string(stored));
  kv_.rewind(seq, num_tokens);
}

// A decoding parent holds its last sampled token uncomputed (and the tokens its grammar forced
// after it, under jump-forward): both it and the child compute them in the next step, each into
// its own copy of the shared partial block (or a fresh block).
void Engine::fork_running(Live& parent, SequenceId child) {
  assert(parent.s.num_remaining() >= 1 && parent.num_to_fork == 0);
  assert(kv_.num_tokens(parent.s.id) == parent.s.num_computed);
  SamplingParams p = parent.params;
  p.seed = fork_seed(parent.params.seed, child);
  Live& c = add_child(parent, child, p);
  c.num_generated = parent.num_generated;
  c.text = parent.text;  // text held back so far (a partial stop string or UTF-8) is the child's too
  c.matcher = parent.matcher;  // and where its reply stands in its grammar and its thinking
  c.in_reasoning = parent.in_reasoning;
  c.num_reasoning_tokens = parent.num_reasoning_tokens;
  c.reasoning_tail = parent.reasoning_tail;
}

// A running child sharing all of the parent's blocks and tokens, as another sample of its
// request: the n - 1 extra samples once the prompt is computed, and forks of running sequences.
Engine::Live& Engine::add_child(Live& parent, SequenceId child, const SamplingParams& params) {
  auto live = std::make_unique<Live>(params);
  live->s.id = child;
  live->s.arrival = parent.s.arrival;
  live->s.tokens = parent.s.tokens;
  live->s.num_computed = parent.s.num_computed;
  live->s.in_kv = true;
  live->s.prefilled = parent.s.prefilled;  // false while forced tokens wait (jump-forward)
  live->s.cache_salt = parent.s.cache_salt;  // a recomputed fork must not land in another salt's cache
  live->s.held = parent.s.held;              // another sample of a request its client holds back
  live->request = parent.request;
  live->num_prompt = parent.num_prompt;
  live->park_when_done = parent.park_when_done;
  RequestCount& count = requests_[parent.request];
  live->index = count.num_samples++;
  ++count.num_live;
  Live& c = *live;
  live_.emplace(child, std::move(live));  // first, so the fork's KV events name the request
  kv_.fork(parent.s.id, child);
  scheduler_.add_running(&c.s);
  return c;
}

// Sequence ids are handed out to any thread's fork() too, hence the lock.
SequenceId Engine::new_sequence_id() {
  std::lock_guard lock(mutex_);
  return next_seq_++;
}

void Engine::release_parked(SequenceId seq) {
  if (parked_.erase(seq)) kv_.free(seq);
}

}  // namespace pagedchat
