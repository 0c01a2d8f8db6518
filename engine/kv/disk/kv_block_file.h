#pragma once
// One KV block on disk (the disk tier, kv_disk_store.h): a header that names what the bytes are
// valid for (the store's namespace: model file, KV element type, block size, backend layout),
// the block's place in the prefix cache's hash chain (its hash and its parent's), its token ids,
// then the block's K/V bytes as the backend lays them out, all under one CRC-32. A file that is
// short, torn, from another namespace or another chain, or fails its checksum is refused with the
// reason: the caller recomputes the block, never serves it.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace pagedchat {

struct KvBlockKey {
  uint64_t namespace_id = 0;  // what the bytes are valid for (KvDiskStore)
  uint64_t hash = 0;          // the block's prefix-cache hash
  uint64_t parent_hash = 0;   // its parent's (the chain's root for a first block)
};

// The file's bytes: header, tokens, payload.
std::vector<uint8_t> encode_kv_block(const KvBlockKey& key, std::span<const int32_t> tokens,
                                     std::span<const uint8_t> payload);

// Checks `file` against what the caller expects (key, tokens, payload size) and copies the
// payload out. Returns "" when it is good, else why not (for the log).
std::string decode_kv_block(std::span<const uint8_t> file, const KvBlockKey& key, std::span<const int32_t> tokens,
                            std::vector<uint8_t>& payload, size_t payload_bytes);

// Bytes of a file for a block of num_tokens tokens and payload_bytes of K/V.
size_t kv_block_file_bytes(size_t num_tokens, size_t payload_bytes);

}  // namespace pagedchat
