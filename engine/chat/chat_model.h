#pragma once
// A model as its chats use it: the model (weights and tokenizer, engine/model) and the chat
// template its conversations are written in. The template sits above the model: engine/model
// knows tokens, not conversations, and which template a chat uses (the one the GGUF carries,
// the built-in format, a file the user gave) is chosen once, by whoever loads the model (the
// CLI's --chat-template, the app's Settings > Chat format), and travels with it here.

#include <memory>
#include <vector>

#include "engine/chat/chat_template.h"
#include "engine/chat/prompt_text.h"

namespace pagedchat {

struct Model;

class ChatModel {
 public:
  ChatModel() = default;
  // Borrows model: it must outlive this ChatModel and its copies.
  ChatModel(const Model& model, ChatTemplate chat_template);
  // Shares model: it lives as long as this ChatModel or a copy does.
  ChatModel(std::shared_ptr<const Model> model, ChatTemplate chat_template);
  // The template the model's GGUF carries; the built-in format recognised from its markers
  // when it carries none or ours cannot render it (fallback_reason() says why); ChatML for a
  // model made in memory (random weights).
  static ChatTemplate own_template(const Model& model);

  explicit operator bool() const { return model_ != nullptr; }
  const Model& model() const { return *model_; }
  const std::shared_ptr<const Model>& shared_model() const { return model_; }
  const ChatTemplate& chat_template() const { return chat_template_; }

  // A chat as prompt tokens: the chat template, its markup's special tokens parsed (never the
  // messages'), and BOS when the model's metadata asks for it and the template did not write it.
  std::vector<int32_t> encode_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt = true) const;
  // Prompt text in the model's chat format (a rendered chat, or one with its last reply left
  // open) as prompt tokens, the same way.
  std::vector<int32_t> encode_prompt(const PromptText& text) const;

 private:
  std::shared_ptr<const Model> model_;
  ChatTemplate chat_template_ = ChatTemplate::chatml();
};

}  // namespace pagedchat
