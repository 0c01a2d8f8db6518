// One chat's held sequence across its turns (see chat_session.h).
#include "engine/chat/chat_session.h"

#include <algorithm>
#include <cassert>

#include "engine/chat/chat_model.h"
#include "engine/model/model.h"

namespace pagedchat {
namespace {

bool starts_with(const std::vector<ChatMessage>& chat, const std::vector<ChatMessage>& prefix) {
  return chat.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), chat.begin());
}

}  // namespace

ChatSession::Turn ChatSession::plan_turn(Engine& engine, const ChatModel& chat_model, std::vector<ChatMessage> chat) {
  assert(!in_flight_ && !unpicked_);
  Turn turn;
  turn.request.park_when_done = true;
  turn.prompt_text = chat_model.chat_template().apply(chat, true);
  // A version forked just now is applied by the engine before this turn's request (commands
  // run in order): it will hold exactly its tokens, all stored.
  const bool forked = !extends(engine, held_, chat, turn.prompt_text) && choose_version(engine, chat_model, chat, turn.prompt_text);
  if (forked || extends(engine, held_, chat, turn.prompt_text)) {
    // What the engine stores, then the last sampled token when it was not computed (a reply
    // ended by its length), then the text that closes the reply and opens the new turn.
    const size_t stored = forked ? held_.tokens.size() : static_cast<size_t>(engine.sequence(held_.seq)->num_stored);
    turn.request.prompt.assign(held_.tokens.begin() + static_cast<std::ptrdiff_t>(stored), held_.tokens.end());
    const PromptText added_text = turn.prompt_text.suffix(held_.text.size());
    std::vector<int32_t> added = chat_model.model().tokenizer->encode_markup(added_text.str(), added_text.markup_spans());
    turn.request.prompt.insert(turn.request.prompt.end(), added.begin(), added.end());
    turn.request.continue_seq = held_.seq;
    turn.prompt_tokens.assign(held_.tokens.begin(), held_.tokens.begin() + static_cast<std::ptrdiff_t>(stored));
    turn.reply_ends = held_.reply_ends;
  } else {
    // Reclaimed under memory pressure, or a chat that does not extend it (an edited system
    // prompt, a regenerated reply): the whole chat, the prefix cache serving what it can.
    release_held(engine);
    turn.request.prompt = chat_model.encode_chat(chat);
  }
  turn.prompt_tokens.insert(turn.prompt_tokens.end(), turn.request.prompt.begin(), turn.request.prompt.end());
  turn.num_submitted = static_cast<int64_t>(turn.request.prompt.size());
  turn.messages = std::move(chat);
  return turn;
}

ChatSession::Turn ChatSession::plan_continue(Engine& engine, const ChatModel& chat_model, std::vector<ChatMessage> chat) {
  assert(!in_flight_ && !unpicked_ && !chat.empty() && chat.back().role == "assistant");
  Turn turn;
  turn.request.park_when_done = true;
  turn.continues_reply = true;
  const std::vector<ChatMessage> asked(chat.begin(), chat.end() - 1);
  turn.prompt_text = chat_model.chat_template().apply(asked, true);
  chat_model.chat_template().open_reply(turn.prompt_text, chat.back().content);
  const std::optional<SequenceView> held = held_.seq >= 0 ? engine.sequence(held_.seq) : std::nullopt;
  const size_t stored = held ? static_cast<size_t>(held->num_stored) : 0;
  if (held && held->state == SequenceState::parked && chat == held_.messages && stored >= 1 && stored <= held_.tokens.size() &&
      held_.tokens.size() - stored <= 1) {
    // A continuation needs one token to compute: the unstored last one, or the last stored one again.
    const size_t from = std::min(stored, held_.tokens.size() - 1);
    if (from < stored) engine.rewind(held_.seq, static_cast<int32_t>(from));
    turn.request.prompt.assign(held_.tokens.begin() + static_cast<std::ptrdiff_t>(from), held_.tokens.end());
    turn.request.continue_seq = held_.seq;
    turn.prompt_tokens = held_.tokens;
    turn.reply_ends = held_.reply_ends;
  } else {
    release_held(engine);
    turn.request.prompt = chat_model.encode_prompt(turn.prompt_text);
    turn.prompt_tokens = turn.request.prompt;
  }
  turn.num_submitted = static_cast<int64_t>(turn.request.prompt.size());
  turn.messages = std::move(chat);
  return turn;
}

// The chat extends what h holds, and reads as its text followed by more: only the difference
// needs computing. (Some templates rewrite a past reply, as Llama 2 puts a space before it:
// then the chat is prompted whole.) At most the last sampled token is not stored yet.
bool ChatSession::extends(const Engine& engine, const Held& h, const std::vector<ChatMessage>& chat,
                          const PromptText& chat_text) const {
  const std::optional<SequenceView> held = h.seq >= 0 ? engine.sequence(h.seq) : std::nullopt;
  if (!held || held->state != SequenceState::parked || !extends_text(h, chat, chat_text)) return false;
  const size_t stored = static_cast<size_t>(held->num_stored);
  return stored <= h.tokens.size() && h.tokens.size() - stored <= 1;
}

bool ChatSession::choose_version(Engine& engine, const ChatModel& chat_model, const std::vector<ChatMessage>& chat,
                                 const PromptText& chat_text) {
  for (Held& kept : kept_) {
    if (!extends(engine, kept, chat, chat_text)) continue;
    std::swap(held_, kept);  // the version shown again; the one held so far is kept in its place
    return false;
  }
  // A new version: held_ forked at the end of the chat's messages before its last one, and kept.
  if (held_.seq < 0 || chat.empty()) return false;
  ChatSession child;
  if (fork_into(engine, chat_model, child, std::vector<ChatMessage>(chat.begin(), chat.end() - 1)) < 0) return false;
  if (!extends_text(child.held_, chat, chat_text)) {
    engine.release(child.held_.seq);
    return false;
  }
  kept_.push_back(std::move(held_));
  if (kept_.size() > kMaxKept) {
    engine.release(kept_.front().seq);
    kept_.erase(kept_.begin());
  }
  held_ = std::move(child.held_);
  return true;
}

bool ChatSession::extends_text(const Held& h, const std::vector<ChatMessage>& chat, const PromptText& chat_text) {
  return chat.size() > h.messages.size() && starts_with(chat, h.messages) && chat_text.size() > h.text.size() &&
         chat_text.starts_with(h.text);
}

void ChatSession::release_kept(Engine& engine) {
  for (const Held& kept : kept_) engine.release(kept.seq);
  kept_.clear();
}

void ChatSession::turn_started(RequestId id, Turn turn) {
  // The parked sequence becomes the running one; it is the chat's again when the turn ends.
  turn.request = {};
  in_flight_ = InFlight{id, std::move(turn)};
  held_.seq = -1;
  held_.messages.clear();
  held_.tokens.clear();
  held_.text = {};
  held_.reply_ends.clear();
}

void ChatSession::record_reply(ChatMessage reply) {
  if (held_.seq < 0 || held_.messages.empty() || held_.messages.back().role != "assistant") return;
  held_.messages.back() = std::move(reply);
}

void ChatSession::hold(SequenceId seq, Turn turn, const SampleOutput& reply) {
  held_.seq = seq;
  held_.tokens = std::move(turn.prompt_tokens);
  held_.tokens.insert(held_.tokens.end(), reply.tokens.begin(), reply.tokens.end());
  held_.messages = std::move(turn.messages);
  if (turn.continues_reply) held_.messages.back().content += reply.text;
  else held_.messages.push_back({"assistant", reply.text});
  held_.text = std::move(turn.prompt_text);
  held_.text.text(reply.text);
  held_.reply_ends = std::move(turn.reply_ends);
  if (turn.continues_reply && !held_.reply_ends.empty() && held_.reply_ends.back().first == held_.messages.size()) held_.reply_ends.pop_back();
  held_.reply_ends.emplace_back(held_.messages.size(), held_.tokens.size());
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

std::optional<std::pair<size_t, PromptText>> ChatSession::held_prefix(const ChatModel& chat_model,
                                                                      const std::vector<ChatMessage>& messages) const {
  if (messages.size() >= held_.messages.size() || !starts_with(held_.messages, messages)) return std::nullopt;
  if (!messages.empty() && messages.back().role == "assistant") {
    // Where that reply ended in this chat's tokens, and its text as the chat holds it.
    auto end = std::find_if(held_.reply_ends.begin(), held_.reply_ends.end(), [&](const auto& e) { return e.first == messages.size(); });
    if (end == held_.reply_ends.end()) return std::nullopt;
    const std::vector<ChatMessage> asked(messages.begin(), messages.end() - 1);
    PromptText text = chat_model.chat_template().apply(asked, true);
    text.text(messages.back().content);
    return std::pair{end->second, std::move(text)};
  }
  // Before a message (an edit forks there): what every chat that goes on from these messages
  // begins with, when its tokens are exactly the first tokens this chat holds (always, for
  // templates whose turns begin with a special token). A template may write text only with the
  // next turn (SmolLM2's writes its default system prompt with the first message), so that start
  // is the common prefix of two renderings with different next messages, else the messages'
  // own rendering.
  auto holds = [&](const PromptText& text) -> std::optional<std::pair<size_t, PromptText>> {
    const std::vector<int32_t> tokens = chat_model.encode_prompt(text);
    if (tokens.empty() || tokens.size() > held_.tokens.size() || !std::equal(tokens.begin(), tokens.end(), held_.tokens.begin()))
      return std::nullopt;
    return std::pair{tokens.size(), text};
  };
  try {
    const std::string next_role = messages.empty() || messages.back().role != "user" ? "user" : "assistant";
    std::vector<ChatMessage> a = messages, b = messages;
    a.push_back({next_role, "a"});
    b.push_back({next_role, "b"});
    const PromptText ra = chat_model.chat_template().apply(a, false), rb = chat_model.chat_template().apply(b, false);
    size_t common = 0;
    while (common < ra.size() && common < rb.size() && ra.str()[common] == rb.str()[common]) ++common;
    if (auto shared = holds(ra.slice(0, common))) return shared;
  } catch (const ChatTemplateError&) {
    // The template refuses that next message (roles that must alternate): the messages alone.
  }
  return holds(chat_model.chat_template().apply(messages, false));
}

SequenceId ChatSession::fork_into(Engine& engine, const ChatModel& chat_model, ChatSession& child,
                                  const std::optional<std::vector<ChatMessage>>& child_chat) const {
  child.release(engine);
  const std::optional<SequenceView> held = held_.seq >= 0 ? engine.sequence(held_.seq) : std::nullopt;
  if (in_flight_ || unpicked_ || !held || held->state != SequenceState::parked) return -1;
  if (!child_chat || *child_chat == held_.messages) {
    child.held_.seq = engine.fork(held_.seq);
    child.held_.messages = held_.messages;
    child.held_.tokens = held_.tokens;
    child.held_.text = held_.text;
    child.held_.reply_ends = held_.reply_ends;
    return child.held_.seq;
  }
  const auto prefix = held_prefix(chat_model, *child_chat);
  // The latest reply's last token may not be stored yet; any earlier cut is.
  if (!prefix || prefix->first > static_cast<size_t>(held->num_stored)) return -1;
  const size_t at = prefix->first;
  child.held_.seq = engine.fork(held_.seq, static_cast<int32_t>(at));
  child.held_.messages = *child_chat;
  child.held_.tokens.assign(held_.tokens.begin(), held_.tokens.begin() + static_cast<std::ptrdiff_t>(at));
  child.held_.text = prefix->second;
  for (const auto& end : held_.reply_ends)
    if (end.first <= child_chat->size()) child.held_.reply_ends.push_back(end);
  return child.held_.seq;
}

void ChatSession::release_held(Engine& engine) {
  if (held_.seq >= 0) engine.release(held_.seq);
  held_.seq = -1;
  held_.messages.clear();
  held_.tokens.clear();
  held_.text = {};
  held_.reply_ends.clear();
}

void ChatSession::release(Engine& engine) {
  if (in_flight_) engine.abort(in_flight_->request);
  in_flight_.reset();
  release_unpicked(engine, -1);
  unpicked_.reset();
  release_held(engine);
  release_kept(engine);
}

void ChatSession::forget() {
  held_.seq = -1;
  held_.messages.clear();
  held_.tokens.clear();
  held_.text = {};
  held_.reply_ends.clear();
  in_flight_.reset();
  unpicked_.reset();
  kept_.clear();
}

std::vector<SequenceId> ChatSession::sequences() const {
  std::vector<SequenceId> seqs;
  if (held_.seq >= 0) seqs.push_back(held_.seq);
  for (const Held& kept : kept_) seqs.push_back(kept.seq);
  if (unpicked_)
    for (const SampleOutput& s : unpicked_->samples)
      if (s.seq >= 0) seqs.push_back(s.seq);
  return seqs;
}

}  // namespace pagedchat
