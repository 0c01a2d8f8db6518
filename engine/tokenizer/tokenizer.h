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
#include <unordered_map>
#include <vector>

#include "engine/tokenizer/special_tokens.h"

namespace pagedchat {

class GgufFile;

class Tokenizer {
 public:
  // Builds the tokenizer a GGUF file describes. Throws Error naming what is missing or wrong.
  static std::unique_ptr<Tokenizer> from_gguf(const GgufFile& file);
  // What a load checks of the vocabulary, without building a tokenizer (a library scan asks
  // whether a file runs here): the kind, the token list against the embedding's rows, the
  // token types, the special ids within the list. Throws Error in the words a load would use.
  static void check_vocabulary(const GgufFile& file, int64_t embedding_rows);
  Tokenizer() = default;
  Tokenizer(const Tokenizer&) = delete;  // token_index_ points into vocab_
  Tokenizer& operator=(const Tokenizer&) = delete;
  virtual ~Tokenizer() = default;

  // Text -> ids. add_special: add BOS (and EOS) as the model's metadata says.
  // parse_special: texts of control tokens (e.g. "<|im_start|>") found in `text` become
  // those tokens; otherwise they are tokenized as plain text. Texts of user-defined tokens
  // (Gemma's "\n\n", "<table>") always become those tokens, as the model saw them in training
  // (sentencepiece and llama.cpp do the same).
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special,
                                      bool parse_special) const = 0;
  // Text -> ids for a rendered chat (PromptText): a control token's text becomes that token
  // only inside `markup`, the spans the chat template wrote (sorted, disjoint), so the
  // messages between them stay plain text whatever they spell. Adds no BOS or EOS.
  std::vector<int32_t> encode_markup(std::string_view text, std::span<const TextSpan> markup) const;
  // The bytes a token stands for. Control tokens give "" unless render_special, but for those
  // always_rendered (harmony's message markup, which the reply's reader needs).
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
  // End of generation: EOS, EOT and the chat templates' end-of-turn tokens (for gpt-oss's
  // harmony vocabulary <|return|> and <|call|>, not <|end|>: tokenizer.cpp says why).
  bool is_eog(int32_t id) const;
  const std::vector<int32_t>& eog_ids() const { return eog_ids_; }
  bool is_control(int32_t id) const;
  // A control token whose text token_to_piece writes out even without render_special.
  bool always_rendered(int32_t id) const;
  // Exact lookup of a vocabulary entry by its text.
  std::optional<int32_t> find_token(std::string_view text) const;
  // The raw vocabulary text of a token, as stored in the GGUF.
  std::string_view token_text(int32_t id) const;

 protected:
  // GGUF token types (the same numbers as sentencepiece's piece types).
  enum TokenType : int32_t {
    kNormal = 1,
    kUnknown = 2,
    kControl = 3,
    kUserDefined = 4,
    kUnused = 5,
    kByte = 6,
  };
  // Reads what both kinds share: tokens, types, special ids, BOS/EOS flags, end-of-generation
  // ids, and the special-token matcher. Throws Error on a missing or inconsistent key.
  void load_vocab(const GgufFile& file, bool default_add_bos);
  // encode() of both kinds: BOS, the text split at special tokens with each plain run given
  // to encode_plain(), EOS.
  std::vector<int32_t> encode_with_specials(std::string_view text, bool add_special,
                                            bool parse_special) const;
  void encode_fragments(const std::vector<SpecialTokenMatcher::Fragment>& fragments, std::vector<int32_t>& out) const;
  // Ids of text that holds no special token, appended to out.
  virtual void encode_plain(std::string_view text, std::vector<int32_t>& out) const = 0;
  int32_t type_of(int32_t id) const { return token_type_[static_cast<size_t>(id)]; }
  bool in_range(int32_t id) const { return id >= 0 && id < num_vocab(); }

  std::vector<std::string> vocab_;
  std::vector<int32_t> token_type_;  // [num_vocab] TokenType; unknown numbers read as kNormal
  std::optional<int32_t> bos_id_, eos_id_;
  bool add_bos_ = false, add_eos_ = false;
  std::vector<int32_t> eog_ids_;
  std::vector<int32_t> rendered_ids_;  // sorted; always_rendered
  std::unordered_map<std::string_view, int32_t> token_index_;  // text -> id (first if repeated)
  SpecialTokenMatcher specials_;  // control and user-defined token texts
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
