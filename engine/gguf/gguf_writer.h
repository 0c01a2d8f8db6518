#pragma once
// The header of a GGUF file being written (version 3, data aligned to 32 bytes): metadata in
// the order added and tensor descriptions with their offsets. The bytes are those ggml's own
// writer (gguf.cpp) produces for the same keys and tensors, so a file we write can equal
// llama.cpp's byte for byte. The tensor data itself is streamed by the caller after encode(),
// each tensor padded to the alignment (padding_after).

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/common/ggml_type.h"

namespace pagedchat {

class GgufHeader {
 public:
  static constexpr uint64_t kAlignment = 32;

  // A value copied from another file (GgufValue::encoded). Setting a key already present
  // removes the old one first, so it moves to the end (as ggml's gguf_set_* does).
  void set_encoded(const std::string& key, std::span<const uint8_t> encoded);
  void set_u32(const std::string& key, uint32_t value);
  void set_string(const std::string& key, std::string_view value);
  void set_string_array(const std::string& key, const std::vector<std::string>& values);
  void remove(std::string_view key);
  bool has(std::string_view key) const;

  // shape: ne[0] first (the row length). Offsets follow in the order added.
  void add_tensor(const std::string& name, GgmlType type, const std::vector<int64_t>& shape);

  size_t num_tensors() const { return tensors_.size(); }
  uint64_t tensor_bytes(size_t i) const { return tensors_[i].bytes; }
  // Zero bytes that follow tensor i's data.
  uint64_t padding_after(size_t i) const;
  // The header, padded to the alignment: the tensor data starts right after it.
  std::vector<uint8_t> encode() const;
  // The whole file's size once every tensor is written.
  uint64_t file_size() const;

 private:
  struct Entry {
    std::string key;
    std::vector<uint8_t> encoded;  // type id, then the value
  };
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> shape;
    uint64_t offset = 0;
    uint64_t bytes = 0;
  };
  std::vector<Entry> entries_;
  std::vector<Tensor> tensors_;
};

}  // namespace pagedchat
