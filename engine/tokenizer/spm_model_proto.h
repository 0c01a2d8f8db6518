#pragma once
// Writes a sentencepiece ModelProto (sentencepiece_model.proto) from a GGUF vocabulary, as
// serialized protobuf bytes for SentencePieceProcessor::LoadFromSerializedProto. Debian's
// libsentencepiece ships no generated protobuf header, so the few fields needed are written
// by hand: pieces, trainer_spec (model type, byte fallback, special ids), normalizer_spec.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace pagedchat {

struct SpmModelSpec {
  std::span<const std::string> pieces;  // [num_vocab] token texts, "▁" for spaces
  std::span<const float> scores;        // [num_vocab] or empty (all 0)
  std::span<const int32_t> types;       // [num_vocab] GGUF token types (same numbers as SPM's)
  int32_t unk_id = 0, bos_id = -1, eos_id = -1, pad_id = -1;
  bool add_dummy_prefix = true;  // prepend "▁" to the text (tokenizer.ggml.add_space_prefix)
};

// The serialized ModelProto: a BPE model (what LLaMA- and Gemma-style sentencepiece models
// are), identity normalization that only escapes spaces, byte fallback when all 256 byte
// pieces are present. Empty or repeated piece texts, which sentencepiece refuses, become
// unique UNUSED placeholders so that ids stay where they are.
std::string build_spm_model_proto(const SpmModelSpec& spec);

}  // namespace pagedchat
