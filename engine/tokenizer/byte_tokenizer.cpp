// Bytes as token ids (see byte_tokenizer.h).
#include "engine/tokenizer/byte_tokenizer.h"

#include <string>

#include "engine/common/error.h"

namespace pagedchat {

ByteTokenizer::ByteTokenizer(int32_t num_vocab) {
  if (num_vocab < 256) fail("a byte tokenizer needs at least 256 tokens, not %d", num_vocab);
  vocab_.reserve(static_cast<size_t>(num_vocab));
  for (int32_t id = 0; id < num_vocab; ++id) vocab_.push_back(token_to_piece(id));
  token_type_.assign(static_cast<size_t>(num_vocab), kNormal);
}

std::vector<int32_t> ByteTokenizer::encode(std::string_view text, bool, bool) const {
  std::vector<int32_t> out;
  encode_plain(text, out);
  return out;
}

void ByteTokenizer::encode_plain(std::string_view text, std::vector<int32_t>& out) const {
  for (char c : text) out.push_back(static_cast<unsigned char>(c));
}

std::string ByteTokenizer::token_to_piece(int32_t id, bool) const {
  if (id >= 32 && id < 127) return std::string(1, static_cast<char>(id));
  return format("<%d>", id);
}

}  // namespace pagedchat
