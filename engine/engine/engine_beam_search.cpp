// Beam search inside the engine's step (see Request::beam_width): each beam reports its top
// log-probabilities when its logits arrive; once every live beam of a request has reported (and
// is on the device), the beam_width best continuations are chosen. A beam chosen k times is
// forked k - 1 times before any of them appends (the forks share every block; the first write
// into the shared partial block copies it), a beam chosen never is dropped (its blocks freed).
#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/engine/engine.h"
#include "engine/engine/engine_live.h"
#include "engine/sample/logprobs.h"

namespace pagedchat {
namespace {

// A hypothesis' rank: its summed log-probability over its length (EOS included) ^ the penalty.
double hypothesis_score(double logprob, size_t length, float length_penalty) {
  return logprob / std::pow(static_cast<double>(std::max<size_t>(length, 1)), length_penalty);
}

}  // namespace

void Engine::beam_logits(Live& live, std::span<const float> logits) {
  BeamGroup& g = *live.beam;
  bool any_allowed = true;
  if (live.matcher && !live.in_reasoning) {
    // Under a grammar, the log-probabilities of the tokens it allows, renormalized over them (a
    // beam at a dead end reports none, and is pruned).
    const grammar::TokenMask& mask = allowed_tokens(*live.matcher);
    any_allowed = mask.count() > 0;
    masked_logits_.assign(logits.begin(), logits.end());
    for (size_t i = 0; i < masked_logits_.size(); ++i)
      if (!mask.allows(static_cast<int32_t>(i))) masked_logits_[i] = -std::numeric_limits<float>::infinity();
    logits = masked_logits_;
  }
  // 2W candidates a beam: enough that W survive however many of them end with EOS.
  std::vector<std::pair<int32_t, float>> top;
  if (any_allowed) top = token_logprobs(logits, 0, 2 * g.width).top;
  std::erase_if(top, [](const auto& t) { return !std::isfinite(t.second); });
  g.reported[live.s.id] = std::move(top);
  select_beams(g);
}

// A beam that does not report: pruned (its KV freed, its request count down), with no event.
void Engine::drop_beam(Live& live) {
  const SequenceId id = live.s.id;
  scheduler_.remove(id);
  if (kv_.has_sequence(id)) kv_.free(id);
  --requests_[live.request].num_live;
  live_.erase(id);
}

void Engine::select_beams(BeamGroup& g) {
  // A beam preempted for recompute reports again once recomputed; a swapped one is waited for.
  for (SequenceId seq : g.live)
    if (!live_.at(seq)->s.in_kv) g.reported.erase(seq);
  if (g.reported.size() < g.live.size()) return;
  for (SequenceId seq : g.live)
    if (live_.at(seq)->s.swapped) return;

  struct Candidate {
    double logprob;
    int32_t token;
    size_t parent;  // rank of the beam it extends
  };
  std::vector<Candidate> candidates;
  for (size_t p = 0; p < g.live.size(); ++p) {
    const Live& beam = *live_.at(g.live[p]);
    for (auto [token, lp] : g.reported.at(g.live[p])) candidates.push_back({beam.beam_logprob + lp, token, p});
  }
  g.reported.clear();
  std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    if (a.logprob != b.logprob) return a.logprob > b.logprob;
    return a.token != b.token ? a.token < b.token : a.parent < b.parent;
  });

  const Tokenizer& tok = *model_.tokenizer;
  const auto width = static_cast<size_t>(g.width);
  std::vector<const Candidate*> chosen;
  for (size_t r = 0; r < candidates.size() && chosen.size() < width; ++r) {
    const Candidate& c = candidates[r];
    const Live& parent = *live_.at(g.live[c.parent]);
    if ((!parent.params.ignore_eos || parent.matcher) && tok.is_eog(c.token)) {
      // An ending among the best W is a hypothesis; an ending below them is not kept.
      if (r < width) {
        BeamGroup::Hypothesis h;
        h.tokens.assign(parent.s.tokens.begin() + parent.num_prompt, parent.s.tokens.end());
        h.logprob = c.logprob;
        h.ended = true;
        h.score = hypothesis_score(c.logprob, h.tokens.size() + 1, g.length_penalty);
        g.finished.push_back(std::move(h));
      }
      continue;
    }
    chosen.push_back(&c);
  }

  // A parent's first continuation is the parent itself, each further one a fork of it. Forks
  // first, while every beam holds only what it computed; then the pruned go; then each chosen
  // continuation is appended to its beam, in rank order.
  std::vector<Live*> beam_of(chosen.size());
  std::vector<bool> continued(g.live.size(), false);
  for (size_t i = 0; i < chosen.size(); ++i) {
    Live& parent = *live_.at(g.live[chosen[i]->parent]);
    if (!continued[chosen[i]->parent]) {
      continued[chosen[i]->parent] = true;
      beam_of[i] = &parent;
      continue;
    }
    Live& child = add_child(parent, new_sequence_id(), parent.params);
    child.beam = &g;
    child.num_generated = parent.num_generated;
    child.matcher = parent.matcher;
    child.in_reasoning = parent.in_reasoning;
    child.num_reasoning_tokens = parent.num_reasoning_tokens;
    child.reasoning_tail = parent.reasoning_tail;
    beam_of[i] = &child;
  }
  for (size_t p = 0; p < g.live.size(); ++p)
    if (!continued[p]) drop_beam(*live_.at(g.live[p]));
  g.live.clear();
  counters_.num_generated += static_cast<int64_t>(chosen.size());
  requests_[g.request].sampled = true;
  for (size_t i = 0; i < chosen.size(); ++i) {
    Live& beam = *beam_of[i];
    beam.s.tokens.push_back(chosen[i]->token);
    if (beam.in_reasoning) follow_reasoning(beam, tok.token_to_piece(chosen[i]->token));
    else if (beam.matcher) beam.matcher->accept(tok.token_to_piece(chosen[i]->token));  // allowed by its mask
    beam.beam_logprob = chosen[i]->logprob;
    ++beam.num_generated;
    g.live.push_back(beam.s.id);
  }

  // Done: no beam left, every beam at its length, or W endings none of the beams can beat
  // (their score only falls as they grow while the length penalty is 1 or more: the usual rule).
  bool done = g.live.empty() || at_length_limit(*live_.at(g.live.front()));
  if (!done && g.finished.size() >= width) {
    std::vector<double> ended;
    for (const auto& h : g.finished) ended.push_back(h.score);
    std::sort(ended.rbegin(), ended.rend());
    const Live& best = *live_.at(g.live.front());
    done = hypothesis_score(best.beam_logprob, static_cast<size_t>(best.num_generated), g.length_penalty) < ended[width - 1];
  }
  if (done) end_beam_search(g);
}

// The hypotheses, best first: the endings, and the live beams as they stand. The n best go out
// as samples 0..n-1, each its tokens then its finished event; the last carries request_done.
void Engine::end_beam_search(BeamGroup& g) {
  std::vector<BeamGroup::Hypothesis> hyps = std::move(g.finished);
  const SamplingParams params = g.params;
  for (SequenceId seq : g.live) {
    Live& beam = *live_.at(seq);
    BeamGroup::Hypothesis h;
    h.tokens.assign(beam.s.tokens.begin() + beam.num_prompt, beam.s.tokens.end());
    h.logprob = beam.beam_logprob;
    h.score = hypothesis_score(h.logprob, h.tokens.size(), g.length_penalty);
    hyps.push_back(std::move(h));
  }
  const std::vector<SequenceId> beams = g.live;
  for (SequenceId seq : beams) drop_beam(*live_.at(seq));
  std::stable_sort(hyps.begin(), hyps.end(), [](const auto& a, const auto& b) { return a.score > b.score; });
  const RequestId request = g.request;
  const size_t n = std::min(hyps.size(), static_cast<size_t>(g.num_return));
  const Tokenizer& tok = *model_.tokenizer;
  for (size_t i = 0; i < n; ++i) {
    ReplyText text(params.stop);
    EngineEvent e;
    e.request = request;
    e.index = static_cast<int>(i);
    set_cache_figures(e, request);
    e.beam = true;
    for (int32_t t : hyps[i].tokens) {
      e.kind = EngineEventKind::token;
      e.token = t;
      e.text = text.push(tok.token_to_piece(t));
      publish(e);
      if (text.stopped()) break;
    }
    e.kind = EngineEventKind::finished;
    e.token = -1;
    e.reason = hyps[i].ended || text.stopped() ? "stop" : "length";
    e.text = text.flush();
    e.cumulative_logprob = hyps[i].logprob;
    e.beam_score = hyps[i].score;
    e.request_done = i + 1 == n;
    publish(e);
  }
  requests_.erase(request);
  beams_.erase(request);  // g is gone
}

}  // namespace pagedchat
