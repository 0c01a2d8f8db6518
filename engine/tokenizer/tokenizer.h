#pragma once
// Text <-> token ids for a model, built from its GGUF vocabulary.
// Two kinds: sentencepiece models ("llama" in GGUF, through the sentencepiece library) and
// byte-level BPE ("gpt2" in GGUF: GPT-2 style, with the pre-tokenizer regex of the file's
// tokenizer.ggml.pre type, through PCRE2).

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pagedchat {

class GgufFile;

class Tokenizer {
 public:
  // Builds the tokenizer a GGUF file describes. Throws Error naming what is missing or wrong.
  static std::unique_ptr<Tokenizer> from_gguf(const GgufFile& file);
  virtual ~Tokenizer() = default;

  // Text -> ids. add_special: add BOS (and EOS) as the model's metadata says.
  // parse_special: texts of control / user-defined tokens (e.g. "<|im_start|>") found in
  // `text` become those tokens; otherwise they are tokenized as plain text.
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special,
                                      bool parse_special) const = 0;
  // The bytes a token stands for. Control tokens give "" unless render_special.
  // Pieces may hold part of a UTF-8 character; see Utf8StreamDecoder.
  virtual std::string token_to_piece(int32_t id, bool render_special = false) const = 0;
  // Concatenated pieces (with the leading space a sentencepiece model adds removed).
  virtual std::string decode(std::span<const int32_t> ids, bool render_special = false) const;

  virtual std::string_view kind() const = 0;  // "spm" or "bpe"
  int32_t num_vocab() const { return static_cast<int32_t>(vocab_.size()); }
  std::optional<int32_t> bos_id() const { return bos_id_; }
  std::optional<int32_t> eos_id() const { return eos_id_; }
  bool add_bos() const { return add_bos_; }
  bool add_eos() const { return add_eos_; }
  // End of generation: EOS, EOT and the chat templates' end-of-turn tokens.
  bool is_eog(int32_t id) const;
  const std::vector<int32_t>& eog_ids() const { return eog_ids_; }
  bool is_control(int32_t id) const;
  // Exact lookup of a vocabulary entry by its text.
  std::optional<int32_t> find_token(std::string_view text) const;
  // The raw vocabulary text of a token, as stored in the GGUF.
  std::string_view token_text(int32_t id) const;

 protected:
  std::vector<std::string> vocab_;
  std::vector<int32_t> token_type_;  // GGUF token types: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte
  std::optional<int32_t> bos_id_, eos_id_;
  bool add_bos_ = false, add_eos_ = false;
  std::vector<int32_t> eog_ids_;
};

// Turns a stream of token pieces into text that never ends inside a UTF-8 character:
// push() returns the complete characters so far, holding back an unfinished tail.
class Utf8StreamDecoder {
 public:
  std::string push(std::string_view bytes);
  // Whatever is held back (an invalid tail becomes U+FFFD).
  std::string flush();

 private:
  std::string pending_;
};

}  // namespace pagedchat
