// Sentencepiece tokenizer: builds the ModelProto, loads it into the library, encodes the
// text between special tokens with it; pieces for decoding are computed once from the vocab.

#include "engine/tokenizer/spm_tokenizer.h"

#include <sentencepiece_processor.h>

#include "engine/common/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/spm_model_proto.h"
#include "engine/tokenizer/utf8.h"

namespace pagedchat {

namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";         // U+2581, how pieces write a space
constexpr std::string_view kUnknownSurface = " \xE2\x81\x87 ";  // sentencepiece's " ⁇ "

std::string unescape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    if (text.substr(pos, kSpaceMark.size()) == kSpaceMark) {
      out.push_back(' ');
      pos += kSpaceMark.size();
    } else {
      out.push_back(text[pos++]);
    }
  }
  return out;
}

// "<0x0A>" -> the byte 0x0A.
std::optional<char> byte_piece_value(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return std::nullopt;
  int value = 0;
  for (char c : text.substr(3, 2)) {
    value *= 16;
    if (c >= '0' && c <= '9')
      value += c - '0';
    else if (c >= 'A' && c <= 'F')
      value += c - 'A' + 10;
    else if (c >= 'a' && c <= 'f')
      value += c - 'a' + 10;
    else
      return std::nullopt;
  }
  return static_cast<char>(value);
}

}  // namespace

SpmTokenizer::SpmTokenizer(const GgufFile& file) {
  load_vocab(file, /*default_add_bos=*/true);
  add_space_prefix_ = file.opt_bool("tokenizer.ggml.add_space_prefix").value_or(true);

  std::vector<float> scores = file.get_float_array("tokenizer.ggml.scores");
  if (!scores.empty() && scores.size() != vocab_.size())
    fail("tokenizer: 'tokenizer.ggml.scores' has %zu entries for %d tokens", scores.size(),
         num_vocab());

  // sentencepiece needs an unknown piece: the declared one, else the first of type unknown.
  std::optional<int32_t> unk;
  if (const auto id = file.opt_int("tokenizer.ggml.unknown_token_id");
      id && *id >= 0 && *id < num_vocab())
    unk = static_cast<int32_t>(*id);
  for (int32_t id = 0; !unk && id < num_vocab(); ++id)
    if (type_of(id) == kUnknown) unk = id;
  if (!unk)
    fail(
        "tokenizer: sentencepiece model without an unknown token "
        "(tokenizer.ggml.unknown_token_id)");
  const std::optional<int64_t> pad = file.opt_int("tokenizer.ggml.padding_token_id");

  SpmModelSpec spec;
  spec.pieces = vocab_;
  spec.scores = scores;
  spec.types = token_type_;
  spec.unk_id = *unk;
  spec.bos_id = bos_id_.value_or(-1);
  spec.eos_id = eos_id_.value_or(-1);
  spec.pad_id = pad && *pad >= 0 && *pad < num_vocab() ? static_cast<int32_t>(*pad) : -1;
  spec.add_dummy_prefix = add_space_prefix_;
  processor_ = std::make_unique<sentencepiece::SentencePieceProcessor>();
  const auto status = processor_->LoadFromSerializedProto(build_spm_model_proto(spec));
  if (!status.ok())
    fail("tokenizer: sentencepiece rejected the vocabulary: %s", status.ToString().c_str());

  pieces_.resize(vocab_.size());
  for (int32_t id = 0; id < num_vocab(); ++id) {
    const std::string& text = vocab_[id];
    switch (type_of(id)) {
      case kControl:
        break;  // rendered from vocab_ only when asked
      case kUnknown:
        pieces_[id] = kUnknownSurface;
        break;
      case kByte:
        if (const auto b = byte_piece_value(text))
          pieces_[id] = std::string(1, *b);
        else
          pieces_[id] = unescape_spaces(text);
        break;
      default:
        pieces_[id] = unescape_spaces(text);
        break;
    }
  }
}

SpmTokenizer::~SpmTokenizer() = default;

std::vector<int32_t> SpmTokenizer::encode(std::string_view text, bool add_special,
                                          bool parse_special) const {
  return encode_with_specials(text, add_special, parse_special);
}

void SpmTokenizer::encode_plain(std::string_view text, std::vector<int32_t>& out) const {
  std::vector<int> ids;
  // sentencepiece reads malformed UTF-8 as U+FFFD anyway; make that explicit and safe.
  const sentencepiece::util::Status status = is_valid_utf8(text)
                                                 ? processor_->Encode(text, &ids)
                                                 : processor_->Encode(sanitize_utf8(text), &ids);
  if (!status.ok())
    fail("tokenizer: sentencepiece could not encode the text: %s", status.ToString().c_str());
  out.insert(out.end(), ids.begin(), ids.end());
}

std::string SpmTokenizer::token_to_piece(int32_t id, bool render_special) const {
  if (!in_range(id)) return {};
  if (type_of(id) == kControl) return render_special || always_rendered(id) ? vocab_[id] : std::string();
  return pieces_[id];
}

std::string SpmTokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
  std::string out;
  bool first_text = true;
  for (int32_t id : ids) {
    std::string piece = token_to_piece(id, render_special);
    if (piece.empty()) continue;
    // The space the model put before the text (add_dummy_prefix) is not part of it.
    if (first_text && add_space_prefix_ && piece[0] == ' ' && in_range(id) &&
        type_of(id) == kNormal)
      piece.erase(0, 1);
    first_text = false;
    out += piece;
  }
  return out;
}

}  // namespace pagedchat
