#include "engine/gguf/gguf_writer.h"

#include <algorithm>
#include <cstring>

#include "engine/common/error.h"

namespace pagedchat {

namespace {

template <typename T>
void put(std::vector<uint8_t>& out, T v) {
  uint8_t raw[sizeof(T)];
  std::memcpy(raw, &v, sizeof(T));
  out.insert(out.end(), raw, raw + sizeof(T));
}

void put_string(std::vector<uint8_t>& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

uint64_t padded(uint64_t n) { return (n + GgufHeader::kAlignment - 1) / GgufHeader::kAlignment * GgufHeader::kAlignment; }

constexpr uint32_t kTypeUint32 = 4, kTypeString = 8, kTypeArray = 9;

}  // namespace

void GgufHeader::remove(std::string_view key) {
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.key == key; }),
                 entries_.end());
}

bool GgufHeader::has(std::string_view key) const {
  return std::any_of(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.key == key; });
}

void GgufHeader::set_encoded(const std::string& key, std::span<const uint8_t> encoded) {
  remove(key);
  entries_.push_back({key, std::vector<uint8_t>(encoded.begin(), encoded.end())});
}

void GgufHeader::set_u32(const std::string& key, uint32_t value) {
  std::vector<uint8_t> encoded;
  put(encoded, kTypeUint32);
  put(encoded, value);
  set_encoded(key, encoded);
}

void GgufHeader::set_string(const std::string& key, std::string_view value) {
  std::vector<uint8_t> encoded;
  put(encoded, kTypeString);
  put_string(encoded, value);
  set_encoded(key, encoded);
}

void GgufHeader::set_string_array(const std::string& key, const std::vector<std::string>& values) {
  std::vector<uint8_t> encoded;
  put(encoded, kTypeArray);
  put(encoded, kTypeString);
  put<uint64_t>(encoded, values.size());
  for (const auto& v : values) put_string(encoded, v);
  set_encoded(key, encoded);
}

void GgufHeader::add_tensor(const std::string& name, GgmlType type, const std::vector<int64_t>& shape) {
  Tensor t{name, type, shape};
  // ggml writes dimensions up to the last one above 1.
  while (t.shape.size() > 1 && t.shape.back() == 1) t.shape.pop_back();
  int64_t elements = 1;
  for (int64_t d : t.shape) elements *= d;
  const auto traits = ggml_type_traits(type);
  if (t.shape.empty() || t.shape[0] % traits.block_size != 0)
    fail("tensor '%s': its rows do not divide into %s blocks", name.c_str(), std::string(traits.name).c_str());
  t.bytes = static_cast<uint64_t>(elements / traits.block_size) * traits.type_size;
  t.offset = tensors_.empty() ? 0 : tensors_.back().offset + padded(tensors_.back().bytes);
  tensors_.push_back(std::move(t));
}

uint64_t GgufHeader::padding_after(size_t i) const { return padded(tensors_[i].bytes) - tensors_[i].bytes; }

std::vector<uint8_t> GgufHeader::encode() const {
  std::vector<uint8_t> out;
  out.reserve(4096);  // (also keeps GCC 12 from a false -Wstringop-overflow on the first insert)
  out.insert(out.end(), {'G', 'G', 'U', 'F'});
  put<uint32_t>(out, 3);
  put<uint64_t>(out, tensors_.size());
  put<uint64_t>(out, entries_.size());
  for (const auto& e : entries_) {
    put_string(out, e.key);
    out.insert(out.end(), e.encoded.begin(), e.encoded.end());
  }
  for (const auto& t : tensors_) {
    put_string(out, t.name);
    put<uint32_t>(out, static_cast<uint32_t>(t.shape.size()));
    for (int64_t d : t.shape) put<int64_t>(out, d);
    put<uint32_t>(out, static_cast<uint32_t>(t.type));
    put<uint64_t>(out, t.offset);
  }
  out.resize(padded(out.size()), 0);
  return out;
}

uint64_t GgufHeader::file_size() const {
  const uint64_t data = tensors_.empty() ? 0 : tensors_.back().offset + padded(tensors_.back().bytes);
  return encode().size() + data;
}

}  // namespace pagedchat
