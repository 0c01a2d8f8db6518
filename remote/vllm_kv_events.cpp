// Decoding vLLM's KV event batches (see the header for both layouts): a bounds walk over the raw
// bytes first, then msgpack-c's object tree read field by field with strict types.
#include "remote/vllm_kv_events.h"

#include <msgpack.hpp>

#include <algorithm>
#include <limits>
#include <span>
#include <stdexcept>

namespace pagedchat::remote {
namespace {

constexpr size_t kMaxPayloadBytes = size_t{16} << 20;
constexpr size_t kMaxEvents = 65536;
constexpr size_t kMaxPerEvent = size_t{1} << 20;  // hashes or token ids in one event
constexpr size_t kMaxValues = size_t{1} << 22;     // every value in the payload: msgpack-c makes a 24-byte object of each
constexpr int kMaxDepth = 16;                       // batch, events, event, extra_keys, a key's tuple, ... with room
constexpr int32_t kMaxBlockSize = 65536;

// Thrown inside, caught once in decode_vllm_kv_batch: its text is the sentence the caller gets.
class DecodeError : public std::runtime_error {
 public:
  explicit DecodeError(const std::string& sentence) : std::runtime_error(sentence) {}
};

[[noreturn]] void fail(const std::string& sentence) { throw DecodeError(sentence); }

// ---- the bounds walk ---------------------------------------------------------------------------
// msgpack-c allocates a container's elements when it reads the container's header, so a 5-byte
// "array of 2^31 elements" would ask for 48 GiB. This walk reads the same bytes first, allocating
// nothing: every container must declare no more elements than bytes are left (each takes at
// least one), every string, bin or ext must fit, nesting stays within kMaxDepth, the values in
// all stay within kMaxValues, and the payload is exactly one value.
class BoundsWalk {
 public:
  explicit BoundsWalk(std::string_view bytes) : bytes_(bytes) {}

  void run() {
    value(1);
    if (at_ != bytes_.size())
      fail("the payload has " + std::to_string(bytes_.size() - at_) + " bytes after its batch");
  }

 private:
  size_t left() const { return bytes_.size() - at_; }

  void need(uint64_t n) {
    if (left() < n) fail("the payload ends inside a value (at byte " + std::to_string(at_) + ")");
  }

  uint64_t big_endian(size_t n) {
    need(n);
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<uint8_t>(bytes_[at_ + i]);
    at_ += n;
    return v;
  }

  void skip(uint64_t n) {
    need(n);
    at_ += static_cast<size_t>(n);
  }

  // A container's elements: `count` of them for an array, twice that (keys and values) for a map.
  void elements(uint64_t count, bool is_map, int depth) {
    if (depth > kMaxDepth) fail("the payload nests deeper than " + std::to_string(kMaxDepth) + " levels");
    const uint64_t num_values = is_map ? count * 2 : count;
    if (num_values > left())
      fail("the payload declares " + std::string(is_map ? "a map of " : "an array of ") + std::to_string(count) +
           (is_map ? " entries in " : " elements in ") + std::to_string(left()) + " bytes");
    for (uint64_t i = 0; i < num_values; ++i) value(depth + 1);
  }

  void value(int depth) {
    if (++num_values_ > kMaxValues) fail("the payload holds more than " + std::to_string(kMaxValues) + " values");
    need(1);
    const uint8_t b = static_cast<uint8_t>(bytes_[at_++]);
    if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) return;  // fixints, nil, booleans
    if (b <= 0x8f) return elements(b & 0x0fu, true, depth);
    if (b <= 0x9f) return elements(b & 0x0fu, false, depth);
    if (b <= 0xbf) return skip(b & 0x1fu);  // fixstr
    switch (b) {
      case 0xc4: case 0xd9: return skip(big_endian(1));  // bin8, str8
      case 0xc5: case 0xda: return skip(big_endian(2));
      case 0xc6: case 0xdb: return skip(big_endian(4));
      case 0xc7: return skip(big_endian(1) + 1);  // ext: its length, then a type byte
      case 0xc8: return skip(big_endian(2) + 1);
      case 0xc9: return skip(big_endian(4) + 1);
      case 0xca: return skip(4);  // float32
      case 0xcb: return skip(8);  // float64
      case 0xcc: case 0xd0: return skip(1);
      case 0xcd: case 0xd1: return skip(2);
      case 0xce: case 0xd2: return skip(4);
      case 0xcf: case 0xd3: return skip(8);
      case 0xd4: return skip(2);  // fixext 1..16: a type byte and the data
      case 0xd5: return skip(3);
      case 0xd6: return skip(5);
      case 0xd7: return skip(9);
      case 0xd8: return skip(17);
      case 0xdc: return elements(big_endian(2), false, depth);
      case 0xdd: return elements(big_endian(4), false, depth);
      case 0xde: return elements(big_endian(2), true, depth);
      case 0xdf: return elements(big_endian(4), true, depth);
      default: fail("the payload has the byte 0xc1 where a value starts, which msgpack never uses");
    }
  }

  std::string_view bytes_;
  size_t at_ = 0;
  size_t num_values_ = 0;
};

// ---- typed reads of msgpack objects ------------------------------------------------------------

const char* type_name(const msgpack::object& o) {
  switch (o.type) {
    case msgpack::type::NIL: return "nil";
    case msgpack::type::BOOLEAN: return "a boolean";
    case msgpack::type::POSITIVE_INTEGER:
    case msgpack::type::NEGATIVE_INTEGER: return "an integer";
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64: return "a float";
    case msgpack::type::STR: return "a string";
    case msgpack::type::BIN: return "bytes";
    case msgpack::type::ARRAY: return "an array";
    case msgpack::type::MAP: return "a map";
    default: return "an extension";
  }
}

[[noreturn]] void wrong_type(const std::string& what, const char* expected, const msgpack::object& o) {
  fail(what + " must be " + expected + ", not " + type_name(o));
}

std::string_view as_text(const msgpack::object& o) { return {o.via.str.ptr, o.via.str.size}; }

int64_t read_int64(const msgpack::object& o, const std::string& what) {
  if (o.type == msgpack::type::NEGATIVE_INTEGER) return o.via.i64;
  if (o.type != msgpack::type::POSITIVE_INTEGER) wrong_type(what, "an integer", o);
  if (o.via.u64 > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    fail(what + " is " + std::to_string(o.via.u64) + ", past a 64-bit signed integer");
  return static_cast<int64_t>(o.via.u64);
}

int32_t read_int_in(const msgpack::object& o, const std::string& what, int64_t lo, int64_t hi) {
  const int64_t v = read_int64(o, what);
  if (v < lo || v > hi)
    fail(what + " is " + std::to_string(v) + "; it must be " + std::to_string(lo) + ".." + std::to_string(hi));
  return static_cast<int32_t>(v);
}

double read_number(const msgpack::object& o, const std::string& what) {
  switch (o.type) {
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64: return o.via.f64;
    case msgpack::type::POSITIVE_INTEGER: return static_cast<double>(o.via.u64);
    case msgpack::type::NEGATIVE_INTEGER: return static_cast<double>(o.via.i64);
    default: wrong_type(what, "a number", o);
  }
}

// nil reads as "": vLLM's None and an absent field mean the same here.
std::string read_text_or_nil(const msgpack::object& o, const std::string& what) {
  if (o.type == msgpack::type::NIL) return {};
  if (o.type != msgpack::type::STR) wrong_type(what, "a string or nil", o);
  return std::string(as_text(o));
}

bool is_hash(const msgpack::object& o) {
  return o.type == msgpack::type::BIN || o.type == msgpack::type::STR || o.type == msgpack::type::POSITIVE_INTEGER ||
         o.type == msgpack::type::NEGATIVE_INTEGER;
}

VllmBlockHash read_hash(const msgpack::object& o, const std::string& what) {
  if (!is_hash(o)) wrong_type(what, "bytes or an integer", o);
  if (o.type == msgpack::type::BIN) return 'b' + std::string(o.via.bin.ptr, o.via.bin.size);
  if (o.type == msgpack::type::STR) return 'b' + std::string(as_text(o));
  // A negative integer's two's complement: the 64-bit value vLLM's hash was before Python signed it.
  const uint64_t v = o.type == msgpack::type::POSITIVE_INTEGER ? o.via.u64 : static_cast<uint64_t>(o.via.i64);
  VllmBlockHash h(9, 'i');
  for (int i = 0; i < 8; ++i) h[1 + i] = static_cast<char>(v >> (56 - 8 * i));
  return h;
}

const msgpack::object_array& read_array(const msgpack::object& o, const std::string& what, size_t max_size) {
  if (o.type != msgpack::type::ARRAY) wrong_type(what, "an array", o);
  if (o.via.array.size > max_size)
    fail(what + " has " + std::to_string(o.via.array.size) + " elements, more than " + std::to_string(max_size));
  return o.via.array;
}

std::vector<VllmBlockHash> read_hashes(const msgpack::object& o, const std::string& what) {
  const msgpack::object_array& a = read_array(o, what, kMaxPerEvent);
  std::vector<VllmBlockHash> hashes;
  hashes.reserve(a.size);
  for (uint32_t i = 0; i < a.size; ++i) {
    // The element's name is built only when it is wrong: an event may hold a million hashes.
    if (!is_hash(a.ptr[i])) wrong_type(what + "[" + std::to_string(i) + "]", "bytes or an integer", a.ptr[i]);
    hashes.push_back(read_hash(a.ptr[i], what));
  }
  return hashes;
}

std::vector<int64_t> read_token_ids(const msgpack::object& o, const std::string& what) {
  const msgpack::object_array& a = read_array(o, what, kMaxPerEvent);
  std::vector<int64_t> ids(a.size);
  for (uint32_t i = 0; i < a.size; ++i) {
    const msgpack::object& t = a.ptr[i];
    // As with hashes, the element's name is built only when it is wrong.
    if (t.type == msgpack::type::NEGATIVE_INTEGER) ids[i] = t.via.i64;
    else if (t.type == msgpack::type::POSITIVE_INTEGER && t.via.u64 <= uint64_t(std::numeric_limits<int64_t>::max()))
      ids[i] = static_cast<int64_t>(t.via.u64);
    else read_int64(t, what + "[" + std::to_string(i) + "]");  // fails, saying why
  }
  return ids;
}

// ---- events ------------------------------------------------------------------------------------

// The fields of each event type in declaration order: the positions of the array layout (the
// type's name is position 0). The map layout names them; the names are the same.
constexpr std::string_view kStoredFields[] = {
    "block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium", "lora_name",
    "extra_keys", "group_idx", "kv_cache_spec_kind", "kv_cache_spec_sliding_window"};
constexpr std::string_view kRemovedFields[] = {"block_hashes", "medium", "group_idx"};
constexpr size_t kStoredRequiredPositions = 4;   // block_hashes .. block_size: vLLM has always sent them
constexpr size_t kRemovedRequiredPositions = 1;  // block_hashes

// Which of the fields every event of its type must carry have been seen.
struct Required {
  bool block_hashes = false;
  bool token_ids = false;
  bool block_size = false;
};

// One field into *e; a field this reader does not use (or know) is left alone.
void take_field(VllmKvEvent* e, std::string_view name, const msgpack::object& v, const std::string& where,
                Required* seen) {
  const std::string what = where + ": " + std::string(name);
  const bool stored = e->kind == VllmKvEventKind::block_stored;
  if (name == "block_hashes") {
    e->block_hashes = read_hashes(v, what);
    seen->block_hashes = true;
  } else if (name == "medium") {
    e->medium = read_text_or_nil(v, what);
  } else if (name == "group_idx") {
    e->group_idx = v.type == msgpack::type::NIL ? -1 : read_int_in(v, what, 0, std::numeric_limits<int32_t>::max());
  } else if (stored && name == "parent_block_hash") {
    if (v.type == msgpack::type::NIL) e->parent_block_hash.reset();
    else e->parent_block_hash = read_hash(v, what);
  } else if (stored && name == "token_ids") {
    e->token_ids = read_token_ids(v, what);
    seen->token_ids = true;
  } else if (stored && name == "block_size") {
    e->block_size = read_int_in(v, what, 1, kMaxBlockSize);
    seen->block_size = true;
  } else if (stored && name == "lora_id") {
    if (v.type == msgpack::type::NIL) e->lora_id.reset();
    else e->lora_id = read_int64(v, what);
  } else if (stored && name == "lora_name") {
    e->lora_name = read_text_or_nil(v, what);
  }
}

void check_complete(const VllmKvEvent& e, const Required& seen, const std::string& where) {
  if (!seen.block_hashes) fail(where + " has no block_hashes");
  if (e.kind != VllmKvEventKind::block_stored) return;
  if (!seen.token_ids) fail(where + " has no token_ids");
  if (!seen.block_size) fail(where + " has no block_size");
  const uint64_t room = uint64_t{e.block_hashes.size()} * uint64_t(e.block_size);
  if (e.token_ids.size() > room)
    fail(where + " has " + std::to_string(e.token_ids.size()) + " token_ids, more than its " +
         std::to_string(e.block_hashes.size()) + " blocks of " + std::to_string(e.block_size) + " hold");
}

std::optional<VllmKvEventKind> kind_named(std::string_view type) {
  if (type == "BlockStored") return VllmKvEventKind::block_stored;
  if (type == "BlockRemoved") return VllmKvEventKind::block_removed;
  if (type == "AllBlocksCleared") return VllmKvEventKind::all_blocks_cleared;
  return std::nullopt;
}

// Reads event number `index`; false when its type is not one this reader knows (skipped).
bool read_event(const msgpack::object& o, size_t index, VllmKvEvent* e) {
  const std::string name = "event " + std::to_string(index);
  const msgpack::object* type = nullptr;
  if (o.type == msgpack::type::ARRAY) {
    if (o.via.array.size == 0) fail(name + " is an empty array; it needs its type first");
    type = &o.via.array.ptr[0];
  } else if (o.type == msgpack::type::MAP) {
    for (uint32_t i = 0; i < o.via.map.size; ++i) {
      const msgpack::object& key = o.via.map.ptr[i].key;
      if (key.type == msgpack::type::STR && as_text(key) == "type") type = &o.via.map.ptr[i].val;
    }
    if (type == nullptr) fail(name + " has no \"type\"");
  } else {
    wrong_type(name, "an array or a map", o);
  }
  if (type->type != msgpack::type::STR) wrong_type(name + "'s type", "a string", *type);
  const std::optional<VllmKvEventKind> kind = kind_named(as_text(*type));
  if (!kind) return false;

  *e = VllmKvEvent{};
  e->kind = *kind;
  if (*kind == VllmKvEventKind::all_blocks_cleared) return true;
  const std::string where = name + " (" + std::string(as_text(*type)) + ")";
  const bool stored = *kind == VllmKvEventKind::block_stored;
  Required seen;
  if (o.type == msgpack::type::ARRAY) {
    const std::span<const std::string_view> fields = stored ? std::span<const std::string_view>(kStoredFields)
                                                            : std::span<const std::string_view>(kRemovedFields);
    const size_t required = stored ? kStoredRequiredPositions : kRemovedRequiredPositions;
    const size_t num_fields = o.via.array.size - 1;
    if (num_fields < required)
      fail(where + " has " + std::to_string(num_fields) + " fields; it needs at least " + std::to_string(required));
    for (size_t i = 0; i < num_fields && i < fields.size(); ++i) take_field(e, fields[i], o.via.array.ptr[1 + i], where, &seen);
  } else {
    for (uint32_t i = 0; i < o.via.map.size; ++i) {
      const msgpack::object_kv& kv = o.via.map.ptr[i];
      if (kv.key.type != msgpack::type::STR) wrong_type(where + ": a field's name", "a string", kv.key);
      take_field(e, as_text(kv.key), kv.val, where, &seen);
    }
  }
  check_complete(*e, seen, where);
  return true;
}

// ---- the batch ---------------------------------------------------------------------------------

void read_events(const msgpack::object& o, VllmKvBatch* batch) {
  if (o.type != msgpack::type::ARRAY) wrong_type("the batch's events", "an array", o);
  if (o.via.array.size > kMaxEvents)
    fail("the batch has " + std::to_string(o.via.array.size) + " events, more than " + std::to_string(kMaxEvents));
  batch->events.reserve(o.via.array.size);
  for (uint32_t i = 0; i < o.via.array.size; ++i) {
    VllmKvEvent e;
    if (read_event(o.via.array.ptr[i], i, &e)) batch->events.push_back(std::move(e));
    else ++batch->num_unknown_events;
  }
}

int32_t read_rank(const msgpack::object& o) {
  if (o.type == msgpack::type::NIL) return -1;
  return read_int_in(o, "the batch's data_parallel_rank", 0, std::numeric_limits<int32_t>::max());
}

void read_batch(const msgpack::object& o, VllmKvBatch* batch) {
  if (o.type == msgpack::type::ARRAY) {
    const msgpack::object_array& a = o.via.array;
    if (a.size < 2) fail("the batch is an array of " + std::to_string(a.size) + " elements; it needs ts and events");
    batch->ts = read_number(a.ptr[0], "the batch's ts");
    read_events(a.ptr[1], batch);
    if (a.size > 2) batch->data_parallel_rank = read_rank(a.ptr[2]);
    return;
  }
  if (o.type != msgpack::type::MAP) wrong_type("the batch", "an array or a map", o);
  const msgpack::object* ts = nullptr;
  const msgpack::object* events = nullptr;
  for (uint32_t i = 0; i < o.via.map.size; ++i) {
    const msgpack::object_kv& kv = o.via.map.ptr[i];
    if (kv.key.type != msgpack::type::STR) wrong_type("a field name of the batch", "a string", kv.key);
    const std::string_view key = as_text(kv.key);
    if (key == "ts") ts = &kv.val;
    else if (key == "events") events = &kv.val;
    else if (key == "data_parallel_rank") batch->data_parallel_rank = read_rank(kv.val);
  }
  if (ts == nullptr) fail("the batch has no ts");
  if (events == nullptr) fail("the batch has no events");
  batch->ts = read_number(*ts, "the batch's ts");
  read_events(*events, batch);
}

}  // namespace

std::string vllm_hash_text(const VllmBlockHash& h) {
  if (h.empty() || (h[0] != 'b' && h[0] != 'i') || (h[0] == 'i' && h.size() != 9)) return {};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text;
  const size_t shown = std::min<size_t>(h.size() - 1, 8);
  for (size_t i = 1; i <= shown; ++i) {
    const auto b = static_cast<uint8_t>(h[i]);
    text.push_back(kHex[b >> 4]);
    text.push_back(kHex[b & 15]);
  }
  if (h.size() - 1 > shown) text += "\xE2\x80\xA6";  // "…": a longer bytes hash
  return text;
}

bool decode_vllm_kv_batch(std::string_view payload, VllmKvBatch* batch, std::string* error) {
  *batch = VllmKvBatch{};
  try {
    if (payload.size() > kMaxPayloadBytes)
      fail("the payload is " + std::to_string(payload.size()) + " bytes, more than " + std::to_string(kMaxPayloadBytes));
    if (payload.empty()) fail("the payload is empty");
    BoundsWalk(payload).run();
    // The walk has vouched for every count; these limits are msgpack-c's own second line, set past
    // the walk's so that the walk's and the fields' sentences are the ones a caller reads.
    const msgpack::unpack_limit limits(/*array=*/kMaxValues, /*map=*/kMaxValues, /*str=*/kMaxPayloadBytes,
                                       /*bin=*/kMaxPayloadBytes, /*ext=*/kMaxPayloadBytes, /*depth=*/kMaxDepth + 1);
    const msgpack::object_handle handle = msgpack::unpack(payload.data(), payload.size(), nullptr, nullptr, limits);
    read_batch(handle.get(), batch);
    return true;
  } catch (const DecodeError& e) {
    *error = e.what();
  } catch (const std::exception& e) {  // msgpack-c's own complaint, or memory
    *error = std::string("the payload is not msgpack: ") + e.what();
  }
  *batch = VllmKvBatch{};
  return false;
}

}  // namespace pagedchat::remote
