// Loading a model file, and turning a chat into its prompt tokens.
#include "engine/model/model.h"

#include "engine/common/error.h"

namespace pagedchat {

std::unique_ptr<Model> Model::load(const std::string& path) {
  auto m = std::make_unique<Model>();
  GgufFile file = GgufFile::open(path);
  try {
    m->weights = ModelWeights::load(std::move(file));
    m->tokenizer = Tokenizer::from_gguf(m->weights.file);
    m->chat_template = ChatTemplate::from_gguf(m->weights.file);
    if (m->tokenizer->num_vocab() != m->weights.config.vocab_size)
      fail("the tokenizer has %d tokens but the embedding has %d rows", m->tokenizer->num_vocab(),
           m->weights.config.vocab_size);
  } catch (const Error& e) {
    throw Error(format("'%s': %s", path.c_str(), e.what()));
  }
  return m;
}

std::vector<int32_t> Model::encode_chat(const std::vector<ChatMessage>& messages) const {
  std::vector<int32_t> tokens = tokenizer->encode(chat_template.apply(messages, true), false, true);
  if (tokenizer->add_bos() && tokenizer->bos_id() && (tokens.empty() || tokens.front() != *tokenizer->bos_id()))
    tokens.insert(tokens.begin(), *tokenizer->bos_id());
  return tokens;
}

}  // namespace pagedchat
