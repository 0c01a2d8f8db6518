// The text a parked chat sequence lacks to read as the next turn's prompt.
#include "engine/chat/chat_continuation.h"

namespace pagedchat {

std::optional<PromptText> chat_continuation(const ChatTemplate& tmpl, const std::vector<ChatMessage>& held,
                                             const std::vector<ChatMessage>& next) {
  if (held.empty() || held.back().role != "assistant" || next.size() <= held.size()) return std::nullopt;
  for (size_t i = 0; i < held.size(); ++i)
    if (held[i].role != next[i].role || held[i].content != next[i].content) return std::nullopt;
  const std::vector<ChatMessage> asked(held.begin(), held.end() - 1);
  PromptText had = tmpl.apply(asked, true);
  had.text(held.back().content);
  const PromptText wanted = tmpl.apply(next, true);
  // Some templates rewrite a past reply (Llama 2 puts a space before it): then the sequence
  // does not read as a prefix of the chat and must not be continued.
  if (wanted.size() <= had.size() || !wanted.starts_with(had)) return std::nullopt;
  return wanted.suffix(had.size());
}

}  // namespace pagedchat
