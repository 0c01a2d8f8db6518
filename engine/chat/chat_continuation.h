#pragma once
// The next turn of a chat whose sequence stays parked in the engine: the prompt text to append
// after the reply the model gave, so that the sequence then reads as the whole chat under the
// template, and only the new text is computed. Template-agnostic: it is the difference of the
// two renderings, and there is none when the new chat does not extend the held one.

#include <optional>
#include <string>
#include <vector>

#include "engine/chat/chat_template.h"

namespace pagedchat {

// held: the messages the parked sequence holds; the last one is the assistant's reply as it
// was generated (the sequence holds the rendered prompt of the messages before it, then that
// reply). next: the whole chat now, ending where the next reply begins. Returns the text to
// tokenize (Tokenizer::encode_markup, no BOS) and append, or nullopt when `next` does not start
// with `held` or the template renders the held reply differently (then the whole chat must be
// prompted afresh).
std::optional<PromptText> chat_continuation(const ChatTemplate& tmpl, const std::vector<ChatMessage>& held,
                                             const std::vector<ChatMessage>& next);

}  // namespace pagedchat
