#pragma once
// Reader for GGUF files (versions 2 and 3), memory-mapped. Every count, offset, size and type
// is checked against the file before use, so a corrupt or hostile file produces an Error that
// names what is wrong and never reads out of bounds. Writing is gguf_writer.h's.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/common/ggml_type.h"

namespace pagedchat {

enum class GgufValueType : uint32_t {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6,
  BOOL = 7, STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};
std::string_view gguf_value_type_name(GgufValueType t);

// One metadata value. Strings and array elements point into the mapped file.
struct GgufValue {
  GgufValueType type = GgufValueType::UINT8;
  // scalars
  uint64_t u = 0;
  int64_t i = 0;
  double f = 0.0;
  std::string_view str;                 // type == STRING
  // arrays
  GgufValueType array_type = GgufValueType::UINT8;
  uint64_t array_count = 0;
  const uint8_t* array_data = nullptr;  // numeric arrays: packed little-endian elements
  std::vector<std::string_view> array_strings;  // string arrays
  // The value as the file encodes it, from its type id to its end: what a writer copies to keep
  // a key exactly as it was (engine/gguf/gguf_writer.h).
  std::span<const uint8_t> encoded;

  bool is_integer() const;
  bool is_float() const;
};

struct GgufTensorInfo {
  std::string name;
  GgmlType type = GgmlType::F32;
  std::vector<int64_t> shape;  // ne[0] is the contiguous (row) dimension, as in ggml
  uint64_t offset = 0;         // relative to the data section
  uint64_t num_bytes = 0;
  int64_t num_elements() const;
  int64_t num_rows() const { return shape.empty() ? 0 : num_elements() / shape[0]; }
};

class GgufFile {
 public:
  // Opens and validates a file (memory-mapped). Throws Error.
  static GgufFile open(const std::string& path);
  // Validates a buffer in memory; the caller keeps it alive. Throws Error. (Fuzzing, tests.)
  static GgufFile from_memory(std::span<const uint8_t> bytes);

  uint32_t version() const { return version_; }
  const std::string& path() const { return path_; }
  uint64_t file_size() const { return size_; }
  const uint8_t* data() const { return data_; }  // the whole file, file_size() bytes
  // Whether data() is a read-only mapping of the file (open), whose pages the kernel can drop
  // and read again (release_pages), rather than memory a caller owns (from_memory).
  bool is_mapped() const { return mapping_ != nullptr; }
  // Gives the whole pages of [p, p + n) (inside data()) back to the kernel: they leave this
  // process's resident memory and are read from the file again if touched. No-op unless mapped.
  void release_pages(const void* p, size_t n) const;

  const GgufValue* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }
  const std::vector<std::string>& keys() const { return keys_; }

  // Typed getters: throw Error naming the key when present with the wrong type, or absent
  // (the get_* forms); the opt_* forms return nullopt when absent.
  std::string get_string(std::string_view key) const;
  std::optional<std::string> opt_string(std::string_view key) const;
  uint64_t get_uint(std::string_view key) const;  // any non-negative integer type
  std::optional<uint64_t> opt_uint(std::string_view key) const;
  std::optional<int64_t> opt_int(std::string_view key) const;
  std::optional<double> opt_float(std::string_view key) const;  // float or integer types
  std::optional<bool> opt_bool(std::string_view key) const;
  // Arrays: the key must hold an array of the given kind (throws otherwise; empty if absent).
  std::vector<std::string_view> get_string_array(std::string_view key) const;
  std::vector<float> get_float_array(std::string_view key) const;
  std::vector<int64_t> get_int_array(std::string_view key) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;
  // Start of a tensor's bytes (num_bytes of them, inside the file).
  const uint8_t* tensor_data(const GgufTensorInfo& t) const { return data_ + data_offset_ + t.offset; }

 GgufFile() = default;  // an empty file: no keys, no tensors

 private:
  void parse();

  std::shared_ptr<void> mapping_;  // keeps the mmap alive across copies
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  std::string path_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::string> keys_;
  std::unordered_map<std::string, GgufValue> values_;
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
};

}  // namespace pagedchat
