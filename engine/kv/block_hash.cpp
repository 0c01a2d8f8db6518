#include "engine/kv/block_hash.h"

namespace pagedchat {

uint64_t hash_block_tokens(uint64_t parent_hash, std::span<const int32_t> tokens) {
  // Two tokens per 64-bit word, each word absorbed through the bijective mixer; the length
  // goes in last so a block and its prefix padded with zeros differ.
  uint64_t h = mix64(parent_hash ^ 0x9e3779b97f4a7c15ull);
  size_t i = 0;
  for (; i + 1 < tokens.size(); i += 2) {
    uint64_t w = static_cast<uint32_t>(tokens[i]) | (static_cast<uint64_t>(static_cast<uint32_t>(tokens[i + 1])) << 32);
    h = mix64(h ^ w);
  }
  if (i < tokens.size()) h = mix64(h ^ static_cast<uint32_t>(tokens[i]) ^ (1ull << 63));
  return mix64(h ^ (static_cast<uint64_t>(tokens.size()) * 0xd6e8feb86659fd93ull));
}

uint64_t root_block_hash(uint64_t model_id) { return mix64(model_id ^ 0x5061676564436861ull); }

}  // namespace pagedchat
