#include "engine/kv/disk/kv_block_file.h"

#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace pagedchat {
namespace {

constexpr char kMagic[8] = {'P', 'C', 'K', 'V', 'B', 'L', 'K', '1'};

// Little-endian fields (every machine we build for is), fixed size, no padding.
struct Header {
  char magic[8];
  uint64_t namespace_id;
  uint64_t hash;
  uint64_t parent_hash;
  uint64_t payload_bytes;
  uint32_t num_tokens;
  uint32_t crc;  // CRC-32 of the whole file with this field zero
};
static_assert(sizeof(Header) == 48);

uint32_t file_crc(std::span<const uint8_t> file) {
  // The crc field's bytes count as zero.
  constexpr size_t at = offsetof(Header, crc);
  const uint8_t zero[4] = {};
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, file.data(), static_cast<uInt>(at));
  crc = crc32(crc, zero, 4);
  const uint8_t* rest = file.data() + at + 4;
  size_t left = file.size() - at - 4;
  while (left > 0) {  // zlib takes 32-bit lengths
    const uInt n = static_cast<uInt>(std::min<size_t>(left, 1u << 30));
    crc = crc32(crc, rest, n);
    rest += n;
    left -= n;
  }
  return static_cast<uint32_t>(crc);
}

}  // namespace

size_t kv_block_file_bytes(size_t num_tokens, size_t payload_bytes) {
  return sizeof(Header) + num_tokens * sizeof(int32_t) + payload_bytes;
}

std::vector<uint8_t> encode_kv_block(const KvBlockKey& key, std::span<const int32_t> tokens,
                                     std::span<const uint8_t> payload) {
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.namespace_id = key.namespace_id;
  h.hash = key.hash;
  h.parent_hash = key.parent_hash;
  h.payload_bytes = payload.size();
  h.num_tokens = static_cast<uint32_t>(tokens.size());
  std::vector<uint8_t> out(kv_block_file_bytes(tokens.size(), payload.size()));
  std::memcpy(out.data(), &h, sizeof h);
  std::memcpy(out.data() + sizeof h, tokens.data(), tokens.size_bytes());
  std::memcpy(out.data() + sizeof h + tokens.size_bytes(), payload.data(), payload.size());
  const uint32_t crc = file_crc(out);
  std::memcpy(out.data() + offsetof(Header, crc), &crc, sizeof crc);
  return out;
}

std::string decode_kv_block(std::span<const uint8_t> file, const KvBlockKey& key, std::span<const int32_t> tokens,
                            std::vector<uint8_t>& payload, size_t payload_bytes) {
  if (file.size() < sizeof(Header)) return "shorter than its header (a torn write)";
  Header h;
  std::memcpy(&h, file.data(), sizeof h);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) return "not a KV block file";
  if (h.namespace_id != key.namespace_id) return "written for another model, KV type or block size";
  if (h.hash != key.hash || h.parent_hash != key.parent_hash) return "another block of the chain";
  if (h.num_tokens != tokens.size() || h.payload_bytes != payload_bytes) return "another block shape";
  if (file.size() != kv_block_file_bytes(tokens.size(), payload_bytes)) return "of the wrong length (a torn write)";
  if (file_crc(file) != h.crc) return "failed its checksum (corrupt)";
  if (std::memcmp(file.data() + sizeof h, tokens.data(), tokens.size_bytes()) != 0) return "holds other tokens";
  payload.assign(file.begin() + static_cast<std::ptrdiff_t>(sizeof h + tokens.size_bytes()), file.end());
  return {};
}

}  // namespace pagedchat
