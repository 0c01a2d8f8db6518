#pragma once
// Byte-level BPE (GPT-2 style, tokenizer.ggml.model = "gpt2"): text is split into words by
// the pre-tokenizer regexes, each word's bytes become the byte-level alphabet's tokens, and
// adjacent tokens merge by the rank of their pair in tokenizer.ggml.merges, lowest first.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/tokenizer/pretokenizer.h"
#include "engine/tokenizer/tokenizer.h"

namespace pagedchat {

class BpeTokenizer final : public Tokenizer {
 public:
  explicit BpeTokenizer(const GgufFile& file);

  std::vector<int32_t> encode(std::string_view text, bool add_special,
                              bool parse_special) const override;
  std::string token_to_piece(int32_t id, bool render_special = false) const override;
  std::string_view kind() const override { return "bpe"; }

 private:
  struct Merge {
    int32_t rank;    // position in the merges list: lower merges first
    int32_t result;  // id of the merged token
  };
  static uint64_t pair_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }

  BpeTokenizer(const GgufFile& file, const PreTokenizerSpec& spec);
  void encode_plain(std::string_view text, std::vector<int32_t>& out) const override;
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

  PreTokenizer pre_;
  bool ignore_merges_ = false;
  std::unordered_map<uint64_t, Merge> merges_;  // pair_key(left id, right id) -> merge
  std::array<int32_t, 256> byte_token_{};       // byte -> id of its alphabet token (-1: none)
  std::optional<int32_t> unk_id_;
  std::vector<std::string> pieces_;  // [num_vocab] bytes of each normal token, decoded once
};

}  // namespace pagedchat
