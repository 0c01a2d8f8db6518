// Structured output and thinking inside the engine's step: the tokens a sequence's grammar
// allows (masks from the engine's TokenMasker), what the grammar forces appended unsampled
// (jump-forward), and a thinking reply followed to the end of its thinking, which a budget
// writes for it (see docs/DESIGN.md, "Request lifecycle", step 5).
#include <chrono>

#include "engine/engine/engine.h"
#include "engine/engine/engine_live.h"

namespace pagedchat {

const grammar::TokenMask& Engine::allowed_tokens(const grammar::GrammarMatcher& matcher) {
  if (!masker_) masker_ = std::make_unique<grammar::TokenMasker>(grammar::VocabularyBytes(*model_.tokenizer));
  const auto t0 = std::chrono::steady_clock::now();
  const grammar::TokenMask& mask = masker_->allowed(matcher);
  counters_.mask_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ++counters_.num_masked_tokens;
  return mask;
}

void Engine::grammar_dead_end(Live& live) {
  EngineEvent e;
  e.kind = EngineEventKind::error;
  e.request = live.request;
  e.seq = live.s.id;
  e.index = live.index;
  e.reason = "request " + std::to_string(live.request) + ": the grammar allows no token of this model's vocabulary after '" +
             model_.tokenizer->decode(std::span<const int32_t>(live.s.tokens).subspan(static_cast<size_t>(live.num_prompt))) + "'";
  publish(e);
  finish(live, "error");
}

void Engine::jump_forward(Live& live) {
  if (live.in_reasoning) return;
  const std::string forced = live.matcher->forced_text();
  if (!forced.empty()) append_forced(live, forced, true);
}

// The text as the tokenizer writes it, each token published as a sampled one is; the sequence
// then computes them all in one chunk (as a prompt's), and samples after the last.
bool Engine::append_forced(Live& live, const std::string& text, bool counts_as_forced) {
  const Tokenizer& tok = *model_.tokenizer;
  size_t appended = 0;
  for (const int32_t t : tok.encode(text, false, false)) {
    const std::string piece = tok.token_to_piece(t);
    if (live.in_reasoning) follow_reasoning(live, piece);
    else if (live.matcher && !live.matcher->accept(piece)) break;  // cannot happen: the text is the grammar's
    live.s.tokens.push_back(t);
    ++live.num_generated;
    if (counts_as_forced) ++counters_.num_forced_tokens;
    ++appended;
    publish(token_event(live, t, piece));
    const char* reason = live.text.stopped() || (live.matcher && !live.in_reasoning && live.matcher->finished()) ? "stop"
                         : at_length_limit(live)                                                              ? "length"
                                                                                                              : nullptr;
    if (reason) {
      finish(live, reason);
      return false;
    }
  }
  if (appended > 0) live.s.prefilled = false;  // its new tokens go in one chunk, not one a step
  return true;
}

void Engine::follow_reasoning(Live& live, const std::string& piece) {
  ++live.num_reasoning_tokens;
  live.reasoning_tail += piece;
  const std::string& end = live.params.reasoning_end;
  const size_t at = live.reasoning_tail.find(end);
  if (at == std::string::npos) {
    // Only what may be the start of the marker is kept.
    if (live.reasoning_tail.size() > end.size()) live.reasoning_tail.erase(0, live.reasoning_tail.size() - end.size());
    return;
  }
  live.in_reasoning = false;
  // The rest of the token is the answer's: the grammar reads it (a token the grammar would
  // refuse there is the model's choice made while thinking; the answer then starts after it).
  if (live.matcher) live.matcher->accept(live.reasoning_tail.substr(at + end.size()));
  live.reasoning_tail.clear();
}

}  // namespace pagedchat
