#pragma once
// Builds GGUF files in memory for tests: metadata of every value type and tensors with given
// bytes. Also the raw writers, so a test can write deliberately broken headers.

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace pagedchat::test {

class GgufBuilder {
 public:
  // Raw little-endian appenders.
  static void put_u32(std::vector<uint8_t>& b, uint32_t v) { put(b, v); }
  static void put_u64(std::vector<uint8_t>& b, uint64_t v) { put(b, v); }
  static void put_str(std::vector<uint8_t>& b, const std::string& s) {
    put_u64(b, s.size());
    b.insert(b.end(), s.begin(), s.end());
  }
  template <typename T>
  static void put(std::vector<uint8_t>& b, T v) {
    uint8_t raw[sizeof(T)];
    std::memcpy(raw, &v, sizeof(T));
    b.insert(b.end(), raw, raw + sizeof(T));
  }

  void add_u32(const std::string& key, uint32_t v) { key_header(key, 4); put_u32(kv_, v); ++num_kv_; }
  void add_i32(const std::string& key, int32_t v) { key_header(key, 5); put(kv_, v); ++num_kv_; }
  void add_f32(const std::string& key, float v) { key_header(key, 6); put(kv_, v); ++num_kv_; }
  void add_bool(const std::string& key, bool v) { key_header(key, 7); put<uint8_t>(kv_, v ? 1 : 0); ++num_kv_; }
  void add_string(const std::string& key, const std::string& v) { key_header(key, 8); put_str(kv_, v); ++num_kv_; }
  void add_u64(const std::string& key, uint64_t v) { key_header(key, 10); put_u64(kv_, v); ++num_kv_; }
  void add_string_array(const std::string& key, const std::vector<std::string>& v) {
    key_header(key, 9);
    put_u32(kv_, 8);
    put_u64(kv_, v.size());
    for (const auto& s : v) put_str(kv_, s);
    ++num_kv_;
  }
  void add_f32_array(const std::string& key, const std::vector<float>& v) {
    key_header(key, 9);
    put_u32(kv_, 6);
    put_u64(kv_, v.size());
    for (float x : v) put(kv_, x);
    ++num_kv_;
  }
  void add_i32_array(const std::string& key, const std::vector<int32_t>& v) {
    key_header(key, 9);
    put_u32(kv_, 5);
    put_u64(kv_, v.size());
    for (int32_t x : v) put(kv_, x);
    ++num_kv_;
  }

  // A tensor with its raw bytes; shape[0] is the row length, as in ggml.
  void add_tensor(const std::string& name, uint32_t type, const std::vector<uint64_t>& shape,
                  const std::vector<uint8_t>& bytes) {
    tensors_.push_back({name, type, shape, bytes});
  }

  std::vector<uint8_t> build(uint32_t version = 3, uint64_t alignment = 32) const {
    std::vector<uint8_t> b;
    b.reserve(4096);  // (also keeps GCC 12 from a false -Warray-bounds on the first append)
    for (char c : {'G', 'G', 'U', 'F'}) b.push_back(static_cast<uint8_t>(c));
    put_u32(b, version);
    put_u64(b, tensors_.size());
    put_u64(b, num_kv_);
    b.insert(b.end(), kv_.begin(), kv_.end());
    uint64_t offset = 0;
    for (const auto& t : tensors_) {
      put_str(b, t.name);
      put_u32(b, static_cast<uint32_t>(t.shape.size()));
      for (uint64_t d : t.shape) put_u64(b, d);
      put_u32(b, t.type);
      put_u64(b, offset);
      offset += (t.bytes.size() + alignment - 1) / alignment * alignment;
    }
    while (b.size() % alignment) b.push_back(0);
    for (size_t i = 0; i < tensors_.size(); ++i) {
      b.insert(b.end(), tensors_[i].bytes.begin(), tensors_[i].bytes.end());
      // No padding after the last tensor: then every shorter prefix of the file is invalid.
      if (i + 1 < tensors_.size())
        while (b.size() % alignment) b.push_back(0);
    }
    return b;
  }

 private:
  void key_header(const std::string& key, uint32_t type) {
    put_str(kv_, key);
    put_u32(kv_, type);
  }
  struct Tensor {
    std::string name;
    uint32_t type;
    std::vector<uint64_t> shape;
    std::vector<uint8_t> bytes;
  };
  std::vector<uint8_t> kv_;
  uint64_t num_kv_ = 0;
  std::vector<Tensor> tensors_;
};

}  // namespace pagedchat::test
