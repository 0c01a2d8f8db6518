// One chat's held sequence across its turns (see chat_session.h).
#include "engine/chat/chat_session.h"

#include <algorithm>
#include <cassert>
#include <set>

#include "engine/model/model.h"

namespace pagedchat {
namespace {

bool starts_with(const std::vector<ChatMessage>& chat, const std::vector<ChatMessage>& prefix) {
  return chat.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), chat.begin());
}

}  // namespace

ChatSession::Turn ChatSession::plan_turn(Engine& engine, const Model& model, std::vector<ChatMessage> chat) {
  assert(!in_flight_ && !unpicked_);
  Turn turn;
  turn.request.park_when_done = true;
  turn.prompt_text = model.chat_template.apply(chat, true);
  const std::optional<SequenceView> held = held_seq_ >= 0 ? engine.sequence(held_seq_) : std::nullopt;
  // The chat extends what the sequence holds, and reads as its text followed by more: only
  // the difference is computed. (Some templates rewrite a past reply, as Llama 2 puts a space
  // before it: then the chat is prompted whole.)
  const bool extends = held && held->state == SequenceState::parked && chat.size() > held_messages_.size() &&
                       starts_with(chat, held_messages_) && turn.prompt_text.size() > held_text_.size() &&
                       turn.prompt_text.compare(0, held_text_.size(), held_text_) == 0;
  // What the engine stores, then the last sampled token when it was not computed (a reply
  // ended by its length), then the text that closes the reply and opens the new turn.
  const size_t stored = held ? static_cast<size_t>(held->num_stored) : 0;
  if (extends && stored <= held_tokens_.size() && held_tokens_.size() - stored <= 1) {
    turn.request.prompt.assign(held_tokens_.begin() + static_cast<std::ptrdiff_t>(stored), held_tokens_.end());
    std::vector<int32_t> added = model.tokenizer->encode(turn.prompt_text.substr(held_text_.size()), false, true);
    turn.request.prompt.insert(turn.request.prompt.end(), added.begin(), added.end());
    turn.request.continue_seq = held_seq_;
    turn.prompt_tokens.assign(held_tokens_.begin(), held_tokens_.begin() + static_cast<std::ptrdiff_t>(stored));
    turn.reply_ends = reply_ends_;
  } else {
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

ChatSession::Turn ChatSession::plan_continue(Engine& engine, const Model& model, std::vector<ChatMessage> chat) {
  assert(!in_flight_ && !unpicked_ && !chat.empty() && chat.back().role == "assistant");
  Turn turn;
  turn.request.park_when_done = true;
  turn.continues_reply = true;
  const std::vector<ChatMessage> asked(chat.begin(), chat.end() - 1);
  turn.prompt_text = model.chat_template.apply(asked, true) + chat.back().content;
  const std::optional<SequenceView> held = held_seq_ >= 0 ? engine.sequence(held_seq_) : std::nullopt;
  const size_t stored = held ? static_cast<size_t>(held->num_stored) : 0;
  if (held && held->state == SequenceState::parked && chat == held_messages_ && stored >= 1 && stored <= held_tokens_.size() &&
      held_tokens_.size() - stored <= 1) {
    // A continuation needs one token to compute: the unstored last one, or the last stored one again.
    const size_t from = std::min(stored, held_tokens_.size() - 1);
    if (from < stored) engine.rewind(held_seq_, static_cast<int32_t>(from));
    turn.request.prompt.assign(held_tokens_.begin() + static_cast<std::ptrdiff_t>(from), held_tokens_.end());
    turn.request.continue_seq = held_seq_;
    turn.prompt_tokens = held_tokens_;
    turn.reply_ends = reply_ends_;
  } else {
    release_held(engine);
    turn.request.prompt = model.tokenizer->encode(turn.prompt_text, false, true);
    const Tokenizer& tok = *model.tokenizer;  // BOS as encode_chat adds it
    if (tok.add_bos() && tok.bos_id() && (turn.request.prompt.empty() || turn.request.prompt.front() != *tok.bos_id()))
      turn.request.prompt.insert(turn.request.prompt.begin(), *tok.bos_id());
    turn.prompt_tokens = turn.request.prompt;
  }
  turn.num_submitted = static_cast<int64_t>(turn.request.prompt.size());
  turn.messages = std::move(chat);
  return turn;
}

void ChatSession::turn_started(RequestId id, Turn turn) {
  // The parked sequence becomes the running one; it is the chat's again when the turn ends.
  turn.request = {};
  in_flight_ = InFlight{id, std::move(turn)};
  held_seq_ = -1;
  held_messages_.clear();
  held_tokens_.clear();
  held_text_.clear();
  reply_ends_.clear();
}

void ChatSession::hold(SequenceId seq, Turn turn, const SampleOutput& reply) {
  held_seq_ = seq;
  held_tokens_ = std::move(turn.prompt_tokens);
  held_tokens_.insert(held_tokens_.end(), reply.tokens.begin(), reply.tokens.end());
  held_messages_ = std::move(turn.messages);
  if (turn.continues_reply) held_messages_.back().content += reply.text;
  else held_messages_.push_back({"assistant", reply.text});
  held_text_ = std::move(turn.prompt_text) + reply.text;
  reply_ends_ = std::move(turn.reply_ends);
  if (turn.continues_reply && !reply_ends_.empty() && reply_ends_.back().first == held_messages_.size()) reply_ends_.pop_back();
  reply_ends_.emplace_back(held_messages_.size(), held_tokens_.size());
}

int ChatSession::turn_ended(Engine& engine, const RequestOutput& output) {
  if (!in_flight_ || in_flight_->request != output.id) return context_used();
  Turn turn = std::move(in_flight_->turn);
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
    if (s.parked) hold(s.seq, std::move(turn), s);
    return context_used();
  }
  const int used = static_cast<int>(turn.prompt_tokens.size() + output.samples[0].tokens.size());
  unpicked_ = Unpicked{std::move(turn), output.samples};
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
  const SampleOutput s = unpicked_->samples[static_cast<size_t>(index)];
  if (s.parked) hold(s.seq, std::move(unpicked_->turn), s);
  unpicked_.reset();
}

std::optional<std::pair<size_t, std::string>> ChatSession::held_prefix(const Model& model,
                                                                      const std::vector<ChatMessage>& messages) const {
  if (messages.size() >= held_messages_.size() || !starts_with(held_messages_, messages)) return std::nullopt;
  if (!messages.empty() && messages.back().role == "assistant") {
    // Where that reply ended in this chat's tokens, and its text as the chat holds it.
    auto end = std::find_if(reply_ends_.begin(), reply_ends_.end(), [&](const auto& e) { return e.first == messages.size(); });
    if (end == reply_ends_.end()) return std::nullopt;
    const std::vector<ChatMessage> asked(messages.begin(), messages.end() - 1);
    return std::pair{end->second, model.chat_template.apply(asked, true) + messages.back().content};
  }
  // Before a message (an edit forks there): the first messages' rendering, when its tokens are
  // exactly the first tokens this chat holds (always, for templates whose turns begin with a
  // special token).
  std::string text = model.chat_template.apply(messages, false);
  const std::vector<int32_t> tokens = model.encode_chat(messages, false);
  if (tokens.empty() || tokens.size() > held_tokens_.size() || !std::equal(tokens.begin(), tokens.end(), held_tokens_.begin()))
    return std::nullopt;
  return std::pair{tokens.size(), std::move(text)};
}

SequenceId ChatSession::fork_into(Engine& engine, const Model& model, ChatSession& child,
                                  const std::optional<std::vector<ChatMessage>>& child_chat) const {
  child.release(engine);
  const std::optional<SequenceView> held = held_seq_ >= 0 ? engine.sequence(held_seq_) : std::nullopt;
  if (in_flight_ || unpicked_ || !held || held->state != SequenceState::parked) return -1;
  if (!child_chat || *child_chat == held_messages_) {
    child.held_seq_ = engine.fork(held_seq_);
    child.held_messages_ = held_messages_;
    child.held_tokens_ = held_tokens_;
    child.held_text_ = held_text_;
    child.reply_ends_ = reply_ends_;
    return child.held_seq_;
  }
  const auto prefix = held_prefix(model, *child_chat);
  // The latest reply's last token may not be stored yet; any earlier cut is.
  if (!prefix || prefix->first > static_cast<size_t>(held->num_stored)) return -1;
  const size_t at = prefix->first;
  child.held_seq_ = engine.fork(held_seq_, static_cast<int32_t>(at));
  child.held_messages_ = *child_chat;
  child.held_tokens_.assign(held_tokens_.begin(), held_tokens_.begin() + static_cast<std::ptrdiff_t>(at));
  child.held_text_ = prefix->second;
  for (const auto& end : reply_ends_)
    if (end.first <= child_chat->size()) child.reply_ends_.push_back(end);
  return child.held_seq_;
}

void ChatSession::release_held(Engine& engine) {
  if (held_seq_ >= 0) engine.release(held_seq_);
  held_seq_ = -1;
  held_messages_.clear();
  held_tokens_.clear();
  held_text_.clear();
  reply_ends_.clear();
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
  held_text_.clear();
  reply_ends_.clear();
  in_flight_.reset();
  unpicked_.reset();
}

int ChatSession::num_blocks_held(const Engine& engine) const {
  std::set<int32_t> blocks;
  for (SequenceId seq : sequences())
    if (std::optional<SequenceView> view = engine.sequence(seq)) blocks.insert(view->block_table.begin(), view->block_table.end());
  return static_cast<int>(blocks.size());
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
