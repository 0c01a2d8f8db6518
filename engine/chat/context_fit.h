#pragma once
// A chat that has outgrown the context: its prompt must leave room for a reply. Under the
// "drop the oldest turns" policy the oldest turns go (a leading system prompt stays, so its
// blocks are still served by the prefix cache) until the rest fits; the last user turn always
// stays. Qt-free; the app's bridge applies it before each turn and tells the chat what went
// out of the model's view.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/chat/chat_template.h"

namespace pagedchat {

class ChatModel;

struct ContextFit {
  std::vector<ChatMessage> chat;  // what the model sees
  size_t num_dropped = 0;         // messages dropped from the front (a system prompt never is)
  size_t num_tokens = 0;          // the prompt's tokens, as encode_chat counts them
  bool fits = false;              // num_tokens + reserve < max_context
};

// reserve: tokens kept free for the reply. drop false: nothing is dropped (fits says whether
// the chat fits as it is).
ContextFit fit_context(const ChatModel& chat_model, std::vector<ChatMessage> chat, int64_t max_context, int64_t reserve, bool drop);

}  // namespace pagedchat
