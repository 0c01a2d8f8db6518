// Hand-written protobuf encoding of the ModelProto fields sentencepiece needs.
// Field numbers from sentencepiece_model.proto:
//   ModelProto: pieces = 1, trainer_spec = 2, normalizer_spec = 3
//   SentencePiece: piece = 1 (string), score = 2 (float), type = 3 (enum)
//   TrainerSpec: model_type = 3, vocab_size = 4, byte_fallback = 35,
//                unk_id = 40, bos_id = 41, eos_id = 42, pad_id = 43
//   NormalizerSpec: name = 1, add_dummy_prefix = 3, remove_extra_whitespaces = 4,
//                   escape_whitespaces = 5

#include "engine/tokenizer/spm_model_proto.h"

#include <cstring>
#include <string_view>
#include <unordered_set>

namespace pagedchat {

namespace {

enum WireType : uint32_t { kVarint = 0, kFixed32 = 5, kLengthDelimited = 2 };
enum PieceType : int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6
};
constexpr int32_t kModelTypeBpe = 2;

class ProtoWriter {
 public:
  void varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7F) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  void tag(uint32_t field, WireType wire) { varint((static_cast<uint64_t>(field) << 3) | wire); }
  // int32 fields: negative values are sign-extended to 64 bits (ten bytes), as protobuf does.
  void int_field(uint32_t field, int64_t v) {
    tag(field, kVarint);
    varint(static_cast<uint64_t>(v));
  }
  void bool_field(uint32_t field, bool v) { int_field(field, v ? 1 : 0); }
  void float_field(uint32_t field, float v) {
    tag(field, kFixed32);
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    for (int k = 0; k < 4; ++k) out_.push_back(static_cast<char>((bits >> (8 * k)) & 0xFF));
  }
  void bytes_field(uint32_t field, std::string_view v) {
    tag(field, kLengthDelimited);
    varint(v.size());
    out_.append(v);
  }
  std::string& str() { return out_; }

 private:
  std::string out_;
};

}  // namespace

std::string build_spm_model_proto(const SpmModelSpec& spec) {
  const size_t n = spec.pieces.size();
  size_t num_byte_pieces = 0;
  for (size_t i = 0; i < n; ++i)
    if (i < spec.types.size() && spec.types[i] == kByte) ++num_byte_pieces;

  ProtoWriter model;
  std::unordered_set<std::string_view> seen;
  seen.reserve(n);
  ProtoWriter piece;
  for (size_t i = 0; i < n; ++i) {
    int32_t type = i < spec.types.size() ? spec.types[i] : kNormal;
    if (type < kNormal || type > kByte) type = kNormal;
    // sentencepiece wants exactly one UNKNOWN piece, at unk_id.
    if (static_cast<int64_t>(i) == spec.unk_id)
      type = kUnknown;
    else if (type == kUnknown)
      type = kControl;
    std::string text = spec.pieces[i];
    if (text.empty() || !seen.insert(spec.pieces[i]).second) {
      text = "<pagedchat_placeholder_" + std::to_string(i) + ">";
      type = kUnused;
    }
    piece.str().clear();
    piece.bytes_field(1, text);
    piece.float_field(2, i < spec.scores.size() ? spec.scores[i] : 0.0f);
    piece.int_field(3, type);
    model.bytes_field(1, piece.str());
  }

  ProtoWriter trainer;
  trainer.int_field(3, kModelTypeBpe);
  trainer.int_field(4, static_cast<int64_t>(n));
  trainer.bool_field(35, num_byte_pieces == 256);
  trainer.int_field(40, spec.unk_id);
  trainer.int_field(41, spec.bos_id);
  trainer.int_field(42, spec.eos_id);
  trainer.int_field(43, spec.pad_id);
  model.bytes_field(2, trainer.str());

  ProtoWriter normalizer;
  normalizer.bytes_field(1, "identity");
  normalizer.bool_field(3, spec.add_dummy_prefix);
  normalizer.bool_field(4, false);  // keep whitespace as written: chat text depends on it
  normalizer.bool_field(5, true);   // spaces become "▁", as the pieces store them
  model.bytes_field(3, normalizer.str());
  return std::move(model.str());
}

}  // namespace pagedchat
