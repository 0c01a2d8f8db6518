#pragma once
// A loaded model: weights (mapped), tokenizer and chat template, all from one GGUF file.

#include <memory>
#include <string>
#include <string_view>

#include "engine/chat/chat_template.h"
#include "engine/model/load_progress.h"
#include "engine/model/model_weights.h"
#include "engine/tokenizer/tokenizer.h"

namespace pagedchat {

struct Model {
  ModelWeights weights;
  std::unique_ptr<Tokenizer> tokenizer;
  ChatTemplate chat_template = ChatTemplate::chatml();

  const ModelConfig& config() const { return weights.config; }
  // A chat as prompt tokens: the chat template, its markup's special tokens parsed (never the
  // messages'), and BOS when the model's metadata asks for it and the template did not write it.
  std::vector<int32_t> encode_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt = true) const;
  // Prompt text in the model's chat format (a rendered chat, or one with its last reply left
  // open) as prompt tokens, the same way.
  std::vector<int32_t> encode_prompt(const PromptText& text) const;
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
