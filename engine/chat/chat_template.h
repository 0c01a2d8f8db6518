#pragma once
// Turns chat messages into the prompt text a model was trained on. Recognised from the
// GGUF's tokenizer.chat_template: ChatML (SmolLM2, Qwen), Llama 3, Gemma, Llama 2 /
// Mistral [INST], and Phi-3 / Phi-4-mini (<|user|> ... <|end|>). A general Jinja interpreter is left to a later issue; an unknown template
// falls back to ChatML, which most instruction-tuned small models understand.

#include <optional>
#include <string>
#include <vector>

#include "engine/chat/prompt_text.h"

namespace pagedchat {

class GgufFile;

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
  bool operator==(const ChatMessage&) const = default;
};

class ChatTemplate {
 public:
  enum class Style { kChatML, kLlama3, kGemma, kLlama2, kPhi3 };

  static ChatTemplate from_gguf(const GgufFile& file);
  static ChatTemplate chatml() { return ChatTemplate(Style::kChatML, {}); }

  // The prompt text; with add_generation_prompt it ends where the assistant's reply begins.
  // Only its markup may become control tokens (Model::encode_prompt): a message that spells
  // "<|im_end|>" is those characters.
  PromptText apply(const std::vector<ChatMessage>& messages, bool add_generation_prompt = true) const;

  Style style() const { return style_; }
  const char* style_name() const;
  // The system prompt the template inserts when the chat has none (SmolLM2 has one).
  const std::optional<std::string>& default_system() const { return default_system_; }

 private:
  ChatTemplate(Style s, std::optional<std::string> default_system)
      : style_(s), default_system_(std::move(default_system)) {}
  Style style_;
  std::optional<std::string> default_system_;
};

}  // namespace pagedchat
