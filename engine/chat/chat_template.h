#pragma once
// Turns chat messages into the prompt text a model was trained on: the GGUF's own
// tokenizer.chat_template, rendered by our Jinja (engine/chat/jinja) as Hugging Face renders it.
// Beside it, a built-in format recognised from the template's markers: ChatML (SmolLM2, Qwen),
// Llama 3, Gemma, Llama 2 / Mistral [INST], Phi-3 / Phi-4-mini (<|user|> ... <|end|>), ChatML for
// anything else. The built-in one is used when the file has no template or ours cannot parse it
// (fallback_reason() says why), and may be chosen instead (builtin()). And plain text, no chat
// format at all, for a base model: the messages are one text the model continues.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/chat/chat_message.h"
#include "engine/chat/prompt_text.h"
#include "engine/chat/tool_calls.h"
#include "engine/common/error.h"

namespace pagedchat::jinja {
class Template;
}

namespace pagedchat {

class GgufFile;

// The model's template refused a conversation (its raise_exception: "System role not
// supported") or failed on it; the message says which, for the user.
class ChatTemplateError : public Error {
 public:
  explicit ChatTemplateError(const std::string& what) : Error(what) {}
};

// The model's template does not finish rendering (it ran past its step, time or size budget:
// engine/chat/jinja/jinja_template.h): no conversation will render with it.
class ChatTemplateTooCostly : public ChatTemplateError {
 public:
  explicit ChatTemplateTooCostly(const std::string& what) : ChatTemplateError(what) {}
};

class ChatTemplate {
 public:
  enum class Style { kChatML, kLlama3, kGemma, kLlama2, kPhi3, kPlainText };

  static ChatTemplate from_gguf(const GgufFile& file);
  static ChatTemplate chatml() { return ChatTemplate(Style::kChatML, {}); }
  // No chat format: the messages' texts one after another, as written (system messages left
  // out), and nothing after them, so a reply continues the text. For base models, trained to
  // continue text: in a chat format they write the next turns themselves.
  static ChatTemplate plain_text() { return ChatTemplate(Style::kPlainText, {}); }
  // A Jinja template of the model's (tests, a template given on the command line); throws Error
  // naming what cannot be parsed. The built-in format beside it is recognised from its markers.
  static ChatTemplate from_jinja(const std::string& source, std::string bos_token, std::string eos_token);
  // `source` in place of this template, with this one's special tokens (--chat-template FILE).
  ChatTemplate with_jinja(const std::string& source) const { return from_jinja(source, bos_token_, eos_token_); }

  // The prompt text; with add_generation_prompt it ends where the assistant's reply begins.
  // Only its markup may become control tokens (ChatModel::encode_prompt): a message that spells
  // "<|im_end|>" is those characters. Throws ChatTemplateError when the model's template
  // refuses or fails on the conversation.
  // With tools (OpenAI's `tools`), a template that renders them gets them as its `tools` and the
  // messages' tool_calls and tool_call_id as Hugging Face passes them; any other format gets
  // them the generic way (tool_calls.h: generic_tool_messages).
  // The turn's tool_choice does not change the prompt: the grammar enforces it.
  PromptText apply(const std::vector<ChatMessage>& messages, bool add_generation_prompt = true, const ToolSet* tools = nullptr) const;
  // `prompt` (a chat rendered with its generation prompt) followed by `reply` left open, as a
  // reply being continued is prompted: its text; for harmony, its channels' markup around the
  // thinking and the answer of its <think> form (the app keeps gpt-oss's replies so:
  // appcore/bridge/harmony_reply.h), so the model goes on in the channel it was cut in.
  void open_reply(PromptText& prompt, std::string_view reply) const;
  // This template with `tools` offered in every conversation it renders (apply's default when
  // it is given none): a chat of the app's whose tools are on renders them in its turns, forks
  // and measures alike, so the text its sequence holds always reads the same. A forced call's
  // opening (ToolSet::forced_prefix) ends the generation prompt. Null tools: none offered.
  ChatTemplate with_tools(std::shared_ptr<const ToolSet> tools, const ToolChoice& choice = {}) const;
  // How this model writes tool calls (kGeneric for the built-in formats and templates that do
  // not render tools).
  ToolFormat tool_format() const { return jinja_ ? tool_format_ : ToolFormat::kGeneric; }
  // Whether the model thinks before it answers (<think> ... </think>: engine/chat/reasoning.h).
  bool thinks() const { return jinja_ && thinks_; }
  // Whether the model replies in gpt-oss's harmony messages (engine/chat/harmony.h): its
  // analysis channel is its thinking, its final channel the answer.
  bool harmony() const { return jinja_ && harmony_; }

  // Whether apply() renders the model's own Jinja template.
  bool uses_model_template() const { return jinja_ != nullptr; }
  // The same chat template with the built-in format only: what a user may choose when the
  // model's template refuses their conversations.
  ChatTemplate builtin() const;
  // Why the model has a template but apply() does not render it ("line 3: {% call %} is not
  // supported..."); empty otherwise.
  const std::string& fallback_reason() const { return fallback_reason_; }
  // "the model's own template" or "the built-in Llama 3 format", for messages and the UI.
  std::string describe() const;

  // The built-in format's family (also what the model's template was recognised as).
  Style style() const { return style_; }
  const char* style_name() const;
  // The system prompt the built-in format inserts when the chat has none (SmolLM2 has one).
  const std::optional<std::string>& default_system() const { return default_system_; }

 private:
  ChatTemplate(Style s, std::optional<std::string> default_system)
      : style_(s), default_system_(std::move(default_system)) {}
  static ChatTemplate recognise(const std::string& source);
  // apply() with exactly these tools (none: none, whatever with_tools offered).
  PromptText render(const std::vector<ChatMessage>& messages, bool add_generation_prompt, const ToolSet* tools) const;
  PromptText apply_builtin(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;

  Style style_;
  std::optional<std::string> default_system_;
  std::shared_ptr<const jinja::Template> jinja_;
  std::string bos_token_, eos_token_;
  std::string fallback_reason_;
  ToolFormat tool_format_ = ToolFormat::kGeneric;
  bool thinks_ = false;
  bool harmony_ = false;
  std::shared_ptr<const ToolSet> offered_tools_;  // with_tools
  ToolChoice offered_choice_;
};

}  // namespace pagedchat
