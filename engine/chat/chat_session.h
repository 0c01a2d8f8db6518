#pragma once
// One chat's hold on the engine between its turns: the parked sequence, the messages it holds,
// its tokens (the last sampled one included, which the engine stores only when the next turn
// appends it) and the text those tokens read as under the template; a compare turn's samples,
// kept parked until one is picked; and forks, which share the parent's blocks up to where the
// child's messages end (a fork at any token). So a next turn appends only what it adds (the
// template's rendering past the held text), and whether and how much a fork shares is decided
// here, where the sequence's state is known, and nowhere else.
//
// Engine thread only (it reads the engine's sequences); Qt-free. The owner submits the
// request a turn plans, tracks it (RequestTracker) and hands the done output back.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/chat/chat_template.h"
#include "engine/engine/engine.h"
#include "engine/engine/request_tracker.h"

namespace pagedchat {

class ChatModel;

class ChatSession {
 public:
  // Where each held reply ends: (messages up to and including it, tokens up to its end).
  using ReplyEnds = std::vector<std::pair<size_t, size_t>>;
  struct Turn {
    Request request;                     // park_when_done; continue_seq when it appends
    std::vector<int32_t> prompt_tokens;  // what the sequence holds when the reply begins
    int64_t num_submitted = 0;           // prompt tokens submitted (appended, or the whole chat)
    std::vector<ChatMessage> messages;   // the chat the turn answers
    PromptText prompt_text;              // what prompt_tokens read as (generation prompt included)
    ReplyEnds reply_ends;                // of the replies before this one, kept when it appends
    bool continues_reply = false;        // plan_continue: the reply extends the chat's last message
  };

  // The next turn of `chat` (the whole chat, ending where the reply begins): the prompt appends
  // to the parked sequence when `chat` extends what it holds, else it is the whole chat (the
  // prefix cache serving what it can) and the held sequence is released. Sampling and n are
  // the caller's to set on the request. A compare left unpicked must be picked first.
  Turn plan_turn(Engine& engine, const ChatModel& chat_model, std::vector<ChatMessage> chat);
  // More of the chat's last message, a reply cut by its length (max tokens, or the context):
  // the held sequence goes on from where the reply stopped (its last sampled token, or, when
  // that is stored already, the sequence rewound by one token and that token again), so the
  // reply continues exactly as a longer one would have; a chat not held is prompted as its
  // messages with the last reply open. The new text joins that reply when the turn ends.
  Turn plan_continue(Engine& engine, const ChatModel& chat_model, std::vector<ChatMessage> chat);
  // The planned turn was submitted as request `id`; the held sequence is the request's now.
  void turn_started(RequestId id, Turn turn);
  RequestId request() const { return in_flight_ ? in_flight_->request : -1; }

  // The turn's request is done. One sample, parked: the chat holds it for the next turn.
  // Several: they stay parked until pick(). A failed turn releases what it parked. Returns the
  // tokens the chat holds for the model now (its context used; 0 when it holds nothing).
  int turn_ended(Engine& engine, const RequestOutput& output);
  bool awaiting_pick() const { return unpicked_.has_value(); }
  // The reply the chat now holds, as the chat records it (a turn with tools: its content and
  // calls, read out of its text), so that the next turn's messages, which carry it so, are
  // seen to extend what is held. The text held is unchanged: it is what the model wrote.
  void record_reply(ChatMessage reply);
  // The chat continues with sample `index` of the unpicked compare (clamped); the others are
  // released.
  void pick(Engine& engine, int index);

  // Forks this chat into `child` (which lets go of what it held) when this chat holds a parked
  // sequence and has no turn in flight or unpicked. child_chat: the child's messages (nullopt:
  // all this chat holds). When they are what it holds, the child shares every block; when they
  // are its first messages (ending with a reply, or not: an edit forks before the edited
  // message), the child shares the blocks of their tokens, the partial block at the cut
  // included (Engine::fork at that token; copy-on-write at its first write). Nothing is
  // computed either way; the new sequence's id is returned. Else -1: the child holds nothing,
  // and its first turn reads its chat whole through the prefix cache.
  SequenceId fork_into(Engine& engine, const ChatModel& chat_model, ChatSession& child,
                       const std::optional<std::vector<ChatMessage>>& child_chat) const;
  // The engine refused the fork (the parent went away meanwhile): the child holds nothing.
  void fork_refused() { forget(); }

  // Everything the chat holds is freed (the chat is gone); a turn in flight is aborted.
  void release(Engine& engine);
  // The engine went away with everything in it: hold nothing, free nothing.
  void forget();

  // Tokens the chat holds for the model (0: nothing parked).
  int context_used() const { return static_cast<int>(held_.tokens.size()); }
  SequenceId held_sequence() const { return held_.seq; }
  // The sequences of this chat the engine holds: the parked one and an unpicked compare's.
  std::vector<SequenceId> sequences() const;

 private:
  struct InFlight {
    RequestId request = -1;
    Turn turn;  // its request moved out
  };
  struct Unpicked {
    Turn turn;
    std::vector<SampleOutput> samples;
  };

  void hold(SequenceId seq, Turn turn, const SampleOutput& reply);
  void release_held(Engine& engine);
  void release_unpicked(Engine& engine, int keep);
  // The tokens of this chat's first `messages` as held: how many, and the text they read as
  // (nullopt: not a prefix this chat can share).
  std::optional<std::pair<size_t, PromptText>> held_prefix(const ChatModel& chat_model, const std::vector<ChatMessage>& messages) const;

  // What one parked sequence of the chat holds: the messages, their tokens (the last sampled
  // one included), the text they read as, and where each reply ends.
  struct Held {
    SequenceId seq = -1;
    std::vector<ChatMessage> messages;
    std::vector<int32_t> tokens;
    PromptText text;
    ReplyEnds reply_ends;
  };
  // Whether `chat` extends what `h` holds (its messages, and its text under the template), and
  // whether h's sequence is parked with at most its last sampled token unstored.
  static bool extends_text(const Held& h, const std::vector<ChatMessage>& chat, const PromptText& chat_text);
  bool extends(const Engine& engine, const Held& h, const std::vector<ChatMessage>& chat, const PromptText& chat_text) const;
  // Before a turn that does not extend held_: a kept version it extends becomes held_, or
  // held_ is forked where the chat leaves it (a regenerated reply, an edited question) and kept
  // (returns true: the fork is made now, applied before the turn's request).
  bool choose_version(Engine& engine, const ChatModel& chat_model, const std::vector<ChatMessage>& chat, const PromptText& chat_text);
  void release_kept(Engine& engine);

  static constexpr size_t kMaxKept = 4;  // versions kept parked per chat (the oldest released first)
  Held held_;
  std::vector<Held> kept_;  // other versions of the chat, parked: switching back computes nothing
  std::optional<InFlight> in_flight_;
  std::optional<Unpicked> unpicked_;
};

}  // namespace pagedchat
