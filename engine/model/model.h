#pragma once
// A loaded model: weights (mapped) and tokenizer, from one GGUF file. It knows tokens, not
// conversations: the chat template its chats are written in sits above it (engine/chat/chat_model.h).

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/model/load_progress.h"
#include "engine/model/model_weights.h"
#include "engine/tokenizer/tokenizer.h"

namespace pagedchat {

struct Model {
  ModelWeights weights;
  std::unique_ptr<Tokenizer> tokenizer;

  const ModelConfig& config() const { return weights.config; }
  // Text in the model's format whose markup spans alone may hold special tokens (a rendered
  // chat: ChatModel::encode_prompt) as prompt tokens, and BOS when the model's metadata asks
  // for it and the text did not write it.
  std::vector<int32_t> encode_markup(std::string_view text, std::span<const TextSpan> markup) const;
  // A raw prompt (generate --raw, /v1/completions): text a user wrote in the model's own format,
  // so every special token's text becomes that token, as llama.cpp's and vLLM's completion
  // endpoints do. BOS as above, never twice.
  std::vector<int32_t> encode_raw(std::string_view text) const;
  // Opens, validates and maps the file; throws Error naming the file and the problem. With
  // an active progress, the mapped file is also read in ("reading", so that a cold load from
  // disk shows its progress here rather than stalling the first forward pass), and a cancel
  // throws LoadCancelled.
  static std::unique_ptr<Model> load(const std::string& path, const LoadProgress& progress = {});
};

}  // namespace pagedchat
