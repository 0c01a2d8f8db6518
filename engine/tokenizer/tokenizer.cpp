// What both tokenizer kinds share: reading the vocabulary metadata, special tokens, BOS/EOS,
// end-of-generation ids, lookups; and the choice of kind from tokenizer.ggml.model.

#include "engine/tokenizer/tokenizer.h"

#include <algorithm>

#include "engine/common/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/bpe_tokenizer.h"
#include "engine/tokenizer/spm_tokenizer.h"

namespace pagedchat {

namespace {

// The tokenizer kind a file names, one we build.
std::string supported_kind(const GgufFile& file) {
  const std::optional<std::string> model = file.opt_string("tokenizer.ggml.model");
  if (!model) fail("tokenizer: metadata 'tokenizer.ggml.model' is missing");
  if (*model != "gpt2" && *model != "llama") {
    fail(
        "tokenizer: model type '%s' (tokenizer.ggml.model) is not supported; "
        "supported: 'gpt2' (byte-level BPE), 'llama' (sentencepiece)",
        model->c_str());
  }
  return *model;
}

std::vector<std::string_view> vocabulary_tokens(const GgufFile& file) {
  std::vector<std::string_view> tokens = file.get_string_array("tokenizer.ggml.tokens");
  if (tokens.empty()) fail("tokenizer: metadata 'tokenizer.ggml.tokens' is missing or empty");
  if (tokens.size() > static_cast<size_t>(INT32_MAX))
    fail("tokenizer: %zu tokens is more than ids can hold", tokens.size());
  return tokens;
}

std::vector<int64_t> token_types(const GgufFile& file, size_t num_tokens) {
  std::vector<int64_t> types = file.get_int_array("tokenizer.ggml.token_type");
  if (!types.empty() && types.size() != num_tokens)
    fail("tokenizer: 'tokenizer.ggml.token_type' has %zu entries for %zu tokens", types.size(), num_tokens);
  return types;
}

std::optional<int32_t> special_id(const GgufFile& file, const char* key, int32_t num_vocab) {
  const std::optional<int64_t> id = file.opt_int(key);
  if (!id) return std::nullopt;
  // Some converters write -1 (or UINT32_MAX) for "none".
  if (*id == -1 || *id == 0xFFFFFFFFll) return std::nullopt;
  if (*id < 0 || *id >= num_vocab)
    fail("tokenizer: metadata '%s' = %lld is outside the vocabulary of %d tokens", key,
         static_cast<long long>(*id), num_vocab);
  return static_cast<int32_t>(*id);
}

constexpr const char* kSpecialIdKeys[] = {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                                          "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"};

// Texts of the end-of-turn tokens of common chat templates (ChatML, Llama 3, GPT-2, Gemma, Phi),
// and gpt-oss's harmony format: <|return|> ends an answer, <|call|> a tool call.
constexpr std::string_view kEndOfTurnTexts[] = {"<|im_end|>", "<|eot_id|>", "<|endoftext|>", "<end_of_turn>",
                                                "<|end|>",    "<|return|>", "<|call|>"};

// Harmony's message markup, which a reply's reader (engine/chat/harmony.h) must see: a reply is
// messages, "<|channel|>analysis<|message|>...<|end|><|start|>assistant<|channel|>final<|message|>...".
constexpr std::string_view kHarmonyMarkup[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>", "<|end|>"};

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const GgufFile& file) {
  if (supported_kind(file) == "gpt2") return std::make_unique<BpeTokenizer>(file);
  return std::make_unique<SpmTokenizer>(file);
}

void Tokenizer::check_vocabulary(const GgufFile& file, int64_t embedding_rows) {
  supported_kind(file);
  const size_t n = vocabulary_tokens(file).size();
  if (static_cast<int64_t>(n) != embedding_rows)
    fail("the tokenizer has %zu tokens but the embedding has %lld rows", n, static_cast<long long>(embedding_rows));
  token_types(file, n);
  for (const char* key : kSpecialIdKeys) special_id(file, key, static_cast<int32_t>(n));
}

void Tokenizer::load_vocab(const GgufFile& file, bool default_add_bos) {
  const std::vector<std::string_view> tokens = vocabulary_tokens(file);
  vocab_.assign(tokens.begin(), tokens.end());
  const int32_t n = num_vocab();

  const std::vector<int64_t> types = token_types(file, vocab_.size());
  token_type_.assign(vocab_.size(), kNormal);
  for (size_t i = 0; i < types.size(); ++i)
    token_type_[i] =
        types[i] >= kNormal && types[i] <= kByte ? static_cast<int32_t>(types[i]) : kNormal;

  token_index_.reserve(vocab_.size());
  for (int32_t id = 0; id < n; ++id) token_index_.emplace(vocab_[id], id);  // keeps the first

  bos_id_ = special_id(file, kSpecialIdKeys[0], n);
  eos_id_ = special_id(file, kSpecialIdKeys[1], n);
  add_bos_ = file.opt_bool("tokenizer.ggml.add_bos_token").value_or(default_add_bos) && bos_id_;
  add_eos_ = file.opt_bool("tokenizer.ggml.add_eos_token").value_or(false) && eos_id_;

  // End of generation: EOS, EOT, EOM, and the end-of-turn tokens of the chat templates.
  auto add_eog = [this](std::optional<int32_t> id) {
    if (id && std::find(eog_ids_.begin(), eog_ids_.end(), *id) == eog_ids_.end())
      eog_ids_.push_back(*id);
  };
  add_eog(eos_id_);
  add_eog(special_id(file, kSpecialIdKeys[2], n));
  add_eog(special_id(file, kSpecialIdKeys[3], n));
  for (std::string_view text : kEndOfTurnTexts) add_eog(find_token(text));
  // gpt-oss (o200k_harmony): <|end|> closes one message of a reply, not the reply (its analysis
  // ends so, and the final answer follows), so where <|return|> and <|call|> exist it is no end
  // of generation; it and the channel markup are written out in the reply's text, which is read
  // back by them. As llama.cpp's llama-vocab.cpp does, except that it renders the markup in any
  // vocabulary and makes those tokens user-defined, so they are parsed out of user text too;
  // here they stay control tokens, parsed only where the template wrote them.
  const std::optional<int32_t> end = find_token("<|end|>");
  if (end && find_token("<|return|>") && find_token("<|call|>")) {
    std::erase(eog_ids_, *end);
    for (std::string_view text : kHarmonyMarkup)
      if (const std::optional<int32_t> id = find_token(text)) rendered_ids_.push_back(*id);
    std::sort(rendered_ids_.begin(), rendered_ids_.end());
  }
  std::sort(eog_ids_.begin(), eog_ids_.end());

  for (int32_t id = 0; id < n; ++id) {
    const int32_t type = token_type_[id];
    if (type == kControl || type == kUserDefined)
      specials_.add(vocab_[id], id, type == kUserDefined);
  }
}

std::vector<int32_t> Tokenizer::encode_with_specials(std::string_view text, bool add_special,
                                                     bool parse_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 2);
  if (add_special && add_bos_) out.push_back(*bos_id_);
  encode_fragments(specials_.split(text, parse_special), out);
  if (add_special && add_eos_) out.push_back(*eos_id_);
  return out;
}

std::vector<int32_t> Tokenizer::encode_markup(std::string_view text, std::span<const TextSpan> markup) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 2);
  encode_fragments(specials_.split(text, markup), out);
  return out;
}

void Tokenizer::encode_fragments(const std::vector<SpecialTokenMatcher::Fragment>& fragments,
                                 std::vector<int32_t>& out) const {
  for (const SpecialTokenMatcher::Fragment& f : fragments) {
    if (f.id >= 0)
      out.push_back(f.id);
    else
      encode_plain(f.text, out);
  }
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
  std::string out;
  for (int32_t id : ids) out += token_to_piece(id, render_special);
  return out;
}

bool Tokenizer::is_eog(int32_t id) const {
  return std::binary_search(eog_ids_.begin(), eog_ids_.end(), id);
}

bool Tokenizer::is_control(int32_t id) const { return in_range(id) && type_of(id) == kControl; }

bool Tokenizer::always_rendered(int32_t id) const {
  return std::binary_search(rendered_ids_.begin(), rendered_ids_.end(), id);
}

std::optional<int32_t> Tokenizer::find_token(std::string_view text) const {
  const auto it = token_index_.find(text);
  if (it == token_index_.end()) return std::nullopt;
  return it->second;
}

std::string_view Tokenizer::token_text(int32_t id) const {
  return in_range(id) ? std::string_view(vocab_[static_cast<size_t>(id)]) : std::string_view();
}

}  // namespace pagedchat
