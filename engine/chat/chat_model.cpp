// A model paired with the chat template its chats are written in.
#include "engine/chat/chat_model.h"

#include "engine/model/model.h"

namespace pagedchat {

ChatModel::ChatModel(const Model& model, ChatTemplate chat_template)
    : model_(&model, [](const Model*) {}), chat_template_(std::move(chat_template)) {}

ChatModel::ChatModel(std::shared_ptr<const Model> model, ChatTemplate chat_template)
    : model_(std::move(model)), chat_template_(std::move(chat_template)) {}

ChatTemplate ChatModel::own_template(const Model& model) {
  const GgufFile& file = model.weights.file;
  return file.has("tokenizer.ggml.tokens") ? ChatTemplate::from_gguf(file) : ChatTemplate::chatml();
}

std::vector<int32_t> ChatModel::encode_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  return encode_prompt(chat_template_.apply(messages, add_generation_prompt));
}

std::vector<int32_t> ChatModel::encode_prompt(const PromptText& text) const {
  return model_->encode_markup(text.str(), text.markup_spans());
}

}  // namespace pagedchat
