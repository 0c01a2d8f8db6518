// Dropping a chat's oldest turns until its prompt leaves room for a reply (see context_fit.h).
#include "engine/chat/context_fit.h"

#include "engine/chat/chat_model.h"

namespace pagedchat {

ContextFit fit_context(const ChatModel& chat_model, std::vector<ChatMessage> chat, int64_t max_context, int64_t reserve, bool drop) {
  ContextFit f;
  const size_t first = !chat.empty() && chat.front().role == "system" ? 1 : 0;
  auto measure = [&] {
    f.num_tokens = chat_model.encode_chat(chat).size();
    f.fits = static_cast<int64_t>(f.num_tokens) + reserve < max_context;
  };
  measure();
  auto last_user = [&] {
    size_t u = chat.size();
    while (u > first && chat[u - 1].role != "user") --u;
    return u == first ? first : u - 1;
  };
  while (drop && !f.fits && last_user() > first) {
    // One turn: the oldest message, and whatever follows it up to the next user message.
    do {
      chat.erase(chat.begin() + static_cast<std::ptrdiff_t>(first));
      ++f.num_dropped;
    } while (chat.size() > first && chat[first].role != "user" && last_user() > first);
    measure();
  }
  f.chat = std::move(chat);
  return f;
}

}  // namespace pagedchat
