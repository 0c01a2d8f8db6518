#pragma once
// A tokenizer for models without a vocabulary (random_model.h): each byte of the text is the
// token with that id, and a token prints as its character when it is printable ASCII, else as
// "<id>". No BOS, no EOS, no end-of-generation ids: random models run to their length.

#include "engine/tokenizer/tokenizer.h"

namespace pagedchat {

class ByteTokenizer final : public Tokenizer {
 public:
  // num_vocab >= 256, so that every byte is a token.
  explicit ByteTokenizer(int32_t num_vocab);

  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const override;
  std::string token_to_piece(int32_t id, bool render_special = false) const override;
  std::string_view kind() const override { return "byte"; }

 protected:
  void encode_plain(std::string_view text, std::vector<int32_t>& out) const override;
};

}  // namespace pagedchat
