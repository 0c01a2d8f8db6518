#pragma once
// Sentencepiece models (tokenizer.ggml.model = "llama": LLaMA, Gemma, ...) through the
// sentencepiece library, loaded from a ModelProto rebuilt from the GGUF vocabulary.

#include <memory>
#include <string>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace pagedchat {

class SpmTokenizer final : public Tokenizer {
 public:
  explicit SpmTokenizer(const GgufFile& file);
  ~SpmTokenizer() override;

  std::vector<int32_t> encode(std::string_view text, bool add_special,
                              bool parse_special) const override;
  std::string token_to_piece(int32_t id, bool render_special = false) const override;
  std::string decode(std::span<const int32_t> ids, bool render_special = false) const override;
  std::string_view kind() const override { return "spm"; }

 private:
  void encode_plain(std::string_view text, std::vector<int32_t>& out) const override;

  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
  bool add_space_prefix_ = true;
  std::vector<std::string> pieces_;  // [num_vocab] bytes of each token, "▁" turned into " "
};

}  // namespace pagedchat
