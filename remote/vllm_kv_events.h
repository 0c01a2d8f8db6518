#pragma once
// vLLM's KV cache events, decoded: the msgpack payload of one batch its ZeroMQ publisher sends
// (vllm/distributed/kv_events.py), in either layout vLLM has used. Only decoding: the socket
// side is remote/vllm_kv_subscriber.h. Our own reading of the wire format; no vLLM code.
//
// The two layouts (msgspec Structs encoded by msgspec), and what is read at each level:
// - old (array_like=True): a batch is [ts, events] or [ts, events, data_parallel_rank]; an event
//   is its type's name followed by its fields in declaration order:
//     ["BlockStored", block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium,
//      lora_name, extra_keys, group_idx, kv_cache_spec_kind, kv_cache_spec_sliding_window]
//     ["BlockRemoved", block_hashes, medium, group_idx]
//     ["AllBlocksCleared"]
//   Fields from lora_id on may be missing (older vLLMs had fewer; msgspec omits trailing
//   defaults) and then take their defaults; elements past the last we know are ignored.
// - new (maps): {"ts":..., "events":[...], "data_parallel_rank":...} and events as maps tagged
//   by "type" ({"type": "BlockStored", "block_hashes": ..., ...}); any field but the ones each
//   type needs may be absent (omit_defaults), unknown ones are ignored.
// The batch and each event are read in whichever form they come, so a positional batch of map
// events (a mix some publishers send) decodes too. An event of a type not known here is skipped
// and counted (num_unknown_events), not an error. extra_keys, kv_cache_spec_kind and
// kv_cache_spec_sliding_window are skipped: nothing here draws them yet.
//
// Bounds against a hostile publisher: a payload past 16 MiB, a batch of more than 65536 events,
// an event of more than 2^20 hashes or token ids, more than 2^22 values in all, nesting deeper
// than 16, and any container that declares more elements than bytes are left (checked before
// msgpack-c allocates anything, so "an array of 2^31 elements" in 5 bytes costs nothing) are
// refused with a sentence. Decoding a payload of n bytes allocates O(n).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pagedchat::remote {

// A block hash as vLLM sent it (ExternalBlockHash = bytes | int): one byte saying which, 'b'
// (the bytes of a bin or str hash: newer vLLMs send sha256 digests) or 'i' (an integer, as its
// 8 bytes big-endian in two's complement, so -1 and 2^64-1 are one hash), then the value. Equal
// hashes compare equal, so it can key a map.
using VllmBlockHash = std::string;

// For display: the first 8 bytes of the value in lowercase hex, "…" after them when a bytes
// hash has more ("3fa2c0de11223344…"); an integer hash is its 16 hex digits. "" for a string
// that is not a VllmBlockHash.
std::string vllm_hash_text(const VllmBlockHash& h);

enum class VllmKvEventKind { block_stored, block_removed, all_blocks_cleared };

struct VllmKvEvent {
  VllmKvEventKind kind = VllmKvEventKind::block_stored;
  std::vector<VllmBlockHash> block_hashes;          // stored or removed, in order
  std::optional<VllmBlockHash> parent_block_hash;   // stored: the block before the first, if any
  // stored: the tokens of all the blocks, in order: block_hashes.size() * block_size of them
  // from vLLM; fewer are kept as sent (the last blocks' tokens then unknown), more are refused.
  std::vector<int64_t> token_ids;
  int32_t block_size = 0;                           // stored: 1..65536
  std::string medium;                               // "GPU", "CPU", ...; empty when not given (vLLM means GPU)
  std::optional<int64_t> lora_id;                   // stored
  std::string lora_name;                            // stored; empty when not given
  int32_t group_idx = -1;                           // the KV cache group; -1 when not given
};

struct VllmKvBatch {
  double ts = 0;                     // the publisher's clock (seconds since the epoch)
  std::vector<VllmKvEvent> events;   // in the order vLLM made them
  int32_t data_parallel_rank = -1;   // -1 when not given
  int32_t num_unknown_events = 0;    // events of a type this reader does not know (skipped)
};

// Decodes one payload into *batch (replaced). false and *error (a sentence naming what is wrong
// and where) when the payload is not a batch; never throws, never crashes.
bool decode_vllm_kv_batch(std::string_view payload, VllmKvBatch* batch, std::string* error);

}  // namespace pagedchat::remote
