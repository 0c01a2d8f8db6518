// One chat's held sequence across its turns (see chat_session.h).
#include "engine/chat/chat_session.h"

#include <algorithm>
#include <cassert>

#include "engine/chat/chat_continuation.h"
#include "engine/model/model.h"

namespace pagedchat {

ChatSession::Turn ChatSession::plan_turn(Engine& engine, const Model& model, std::vector<ChatMessage> chat) {
  assert(!in_flight_ && !unpicked_);
  Turn turn;
  turn.request.park_when_done = true;
  const std::optional<SequenceView> held = held_seq_ >= 0 ? engine.sequence(held_seq_) : std::nullopt;
  if (held && held->state == SequenceState::parked) {
    // What the engine stores, then the last sampled token when it was not computed (a reply
    // ended by its length), then the text that closes the reply and opens the new turn.
    const size_t stored = static_cast<size_t>(held->num_stored);
    auto text = chat_continuation(model.chat_template, held_messages_, chat);
    if (text && stored <= held_tokens_.size() && held_tokens_.size() - stored <= 1) {
      turn.request.prompt.assign(held_tokens_.begin() + static_cast<std::ptrdiff_t>(stored), held_tokens_.end());
      std::vector<int32_t> added = model.tokenizer->encode(*text, false, true);
      turn.request.prompt.insert(turn.request.prompt.end(), added.begin(), added.end());
      turn.request.continue_seq = held_seq_;
      turn.prompt_tokens.assign(held_tokens_.begin(), held_tokens_.begin() + static_cast<std::ptrdiff_t>(stored));
    }
  }
  if (turn.request.continue_seq < 0) {
    // Reclaimed under memory pressure, or a chat that does not extend it (an edited system
    // prompt, a regenerated reply): the whole chat, the prefix cache serving what it can.
    release_held(engine);
    turn.request.prompt = model.encode_chat(chat);
  }
  turn.prompt_tokens.insert(turn.prompt_tokens.end(), turn.request.prompt.begin(), turn.request.prompt.end());
  turn.num_submitted = static_cast<int64_t>(turn.request.prompt.size());
  turn.messages = std::move(chat);
  return turn;
}

void ChatSession::turn_started(RequestId id, Turn turn) {
  // The parked sequence becomes the running one; it is the chat's again when the turn ends.
  in_flight_ = InFlight{id, std::move(turn.messages), std::move(turn.prompt_tokens)};
  held_seq_ = -1;
  held_messages_.clear();
  held_tokens_.clear();
}

void ChatSession::hold(SequenceId seq, std::vector<ChatMessage> messages, std::vector<int32_t> prompt_tokens,
                       const SampleOutput& reply) {
  held_seq_ = seq;
  held_tokens_ = std::move(prompt_tokens);
  held_tokens_.insert(held_tokens_.end(), reply.tokens.begin(), reply.tokens.end());
  held_messages_ = std::move(messages);
  held_messages_.push_back({"assistant", reply.text});
}

int ChatSession::turn_ended(Engine& engine, const RequestOutput& output) {
  if (!in_flight_ || in_flight_->request != output.id) return context_used();
  InFlight turn = std::move(*in_flight_);
  in_flight_.reset();
  if (!output.ok()) {
    for (const SampleOutput& s : output.samples)
      if (s.parked) engine.release(s.seq);
    return 0;
  }
  if (output.samples.size() == 1) {
    // Kept for the next turn: the chat now holds this reply too. Otherwise stopped: the
    // engine freed the sequence, and the next turn reads the chat afresh.
    const SampleOutput& s = output.samples[0];
    if (s.parked) hold(s.seq, std::move(turn.messages), std::move(turn.prompt_tokens), s);
    return context_used();
  }
  const int used = static_cast<int>(turn.prompt_tokens.size() + output.samples[0].tokens.size());
  unpicked_ = Unpicked{std::move(turn.messages), std::move(turn.prompt_tokens), output.samples};
  return used;
}

void ChatSession::release_unpicked(Engine& engine, int keep) {
  if (!unpicked_) return;
  for (int i = 0; i < static_cast<int>(unpicked_->samples.size()); ++i) {
    const SampleOutput& s = unpicked_->samples[static_cast<size_t>(i)];
    if (i != keep && s.parked && s.seq >= 0) engine.release(s.seq);
  }
}

void ChatSession::pick(Engine& engine, int index) {
  if (!unpicked_) return;
  index = std::clamp(index, 0, static_cast<int>(unpicked_->samples.size()) - 1);
  release_unpicked(engine, index);
  const SampleOutput& s = unpicked_->samples[static_cast<size_t>(index)];
  if (s.parked) hold(s.seq, std::move(unpicked_->messages), std::move(unpicked_->prompt_tokens), s);
  unpicked_.reset();
}

SequenceId ChatSession::fork_into(Engine& engine, ChatSession& child, const std::vector<ChatMessage>& child_chat) const {
  child.release(engine);
  const std::optional<SequenceView> held = held_seq_ >= 0 ? engine.sequence(held_seq_) : std::nullopt;
  const bool can_share = !in_flight_ && !unpicked_ && held && held->state == SequenceState::parked &&
                         (child_chat.empty() || child_chat == held_messages_);
  if (!can_share) return -1;
  child.held_seq_ = engine.fork(held_seq_);
  child.held_messages_ = held_messages_;
  child.held_tokens_ = held_tokens_;
  return child.held_seq_;
}

void ChatSession::release_held(Engine& engine) {
  if (held_seq_ >= 0) engine.release(held_seq_);
  held_seq_ = -1;
  held_messages_.clear();
  held_tokens_.clear();
}

void ChatSession::release(Engine& engine) {
  if (in_flight_) engine.abort(in_flight_->request);
  in_flight_.reset();
  release_unpicked(engine, -1);
  unpicked_.reset();
  release_held(engine);
}

void ChatSession::forget() {
  held_seq_ = -1;
  held_messages_.clear();
  held_tokens_.clear();
  in_flight_.reset();
  unpicked_.reset();
}

std::vector<SequenceId> ChatSession::sequences() const {
  std::vector<SequenceId> seqs;
  if (held_seq_ >= 0) seqs.push_back(held_seq_);
  if (unpicked_)
    for (const SampleOutput& s : unpicked_->samples)
      if (s.seq >= 0) seqs.push_back(s.seq);
  return seqs;
}

}  // namespace pagedchat
