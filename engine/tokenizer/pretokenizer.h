#pragma once
// Pre-tokenizer of byte-level BPE models: splits text into words with the regexes of the
// GGUF's tokenizer.ggml.pre type, through PCRE2 (UTF + UCP, JIT when available). Several
// regexes apply in turn, each splitting the pieces of the previous one; a piece is both
// what a regex matches and the text between matches (Hugging Face's "isolated" Split).

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace pagedchat {

struct PreTokenizerSpec {
  std::vector<std::string> patterns;  // PCRE2 syntax, applied in order
  bool ignore_merges = false;         // a word that is itself a token is taken whole (Llama 3)
  bool default_add_bos = false;       // when the GGUF has no tokenizer.ggml.add_bos_token
};

// The spec of a tokenizer.ggml.pre type ("smollm", "llama-bpe", "qwen2", ...).
// Throws Error naming the type when it is not one we know.
PreTokenizerSpec pre_tokenizer_spec(std::string_view pre_type);

class PreTokenizer {
 public:
  // Compiles the patterns; throws Error on a pattern PCRE2 rejects.
  explicit PreTokenizer(const std::vector<std::string>& patterns);
  ~PreTokenizer();
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;

  // Appends the words of `text` (views into it) to `out`. `text` must be valid UTF-8.
  void split(std::string_view text, std::vector<std::string_view>& out) const;

 private:
  struct Regex;
  std::vector<std::unique_ptr<Regex>> regexes_;
};

}  // namespace pagedchat
