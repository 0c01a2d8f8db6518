#pragma once
// Content hashes for the prefix cache. A full block's hash covers its parent block's hash and
// its own token ids; the chain starts from a root made of the model identity, so a block's
// hash names its whole token prefix under one model. 64 bits, not cryptographic: the cache
// treats a hash only as an index and checks content before serving (see BlockContent).

#include <cstdint>
#include <functional>
#include <span>

namespace pagedchat {

// The hash of a full block. Tests inject their own to force collisions.
using BlockHashFn = std::function<uint64_t(uint64_t parent_hash, std::span<const int32_t> tokens)>;

// splitmix64's finalizer: a bijection on 64 bits with full avalanche.
inline uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

uint64_t hash_block_tokens(uint64_t parent_hash, std::span<const int32_t> tokens);
uint64_t root_block_hash(uint64_t model_id);

}  // namespace pagedchat
