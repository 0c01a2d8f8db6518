// GGUF parsing with every read bounds-checked. Layout (little-endian):
//   magic "GGUF", u32 version, u64 tensor_count, u64 kv_count, kv pairs, tensor infos,
//   padding to `general.alignment`, tensor data.
#include "engine/gguf/gguf_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "engine/common/error.h"

namespace pagedchat {
namespace {

// Limits that no real model reaches; they keep a hostile header from making us allocate
// unbounded memory before the file-size checks can catch it.
constexpr uint64_t kMaxTensors = 1u << 20;
constexpr uint64_t kMaxKeys = 1u << 20;
constexpr uint64_t kMaxDims = 4;
constexpr uint64_t kMaxStringLen = 1u << 30;

size_t value_type_size(GgufValueType t) {
  switch (t) {
    case GgufValueType::UINT8: case GgufValueType::INT8: case GgufValueType::BOOL: return 1;
    case GgufValueType::UINT16: case GgufValueType::INT16: return 2;
    case GgufValueType::UINT32: case GgufValueType::INT32: case GgufValueType::FLOAT32: return 4;
    case GgufValueType::UINT64: case GgufValueType::INT64: case GgufValueType::FLOAT64: return 8;
    default: return 0;  // STRING, ARRAY: variable
  }
}

bool valid_value_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufValueType::FLOAT64); }

// A cursor over the file bytes that refuses to read past the end.
class Reader {
 public:
  Reader(const uint8_t* data, uint64_t size) : data_(data), size_(size) {}
  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }

  void need(uint64_t n, const char* what) const {
    if (n > remaining())
      fail("truncated file: %s needs %llu bytes at offset %llu but only %llu remain", what,
           (unsigned long long)n, (unsigned long long)pos_, (unsigned long long)remaining());
  }
  template <typename T>
  T read(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string_view read_string(const char* what, uint32_t version) {
    uint64_t len = version == 1 ? read<uint32_t>(what) : read<uint64_t>(what);
    if (len > kMaxStringLen) fail("%s: string length %llu is implausible", what, (unsigned long long)len);
    need(len, what);
    std::string_view s(reinterpret_cast<const char*>(data_ + pos_), len);
    pos_ += len;
    return s;
  }
  const uint8_t* take(uint64_t n, const char* what) {
    need(n, what);
    const uint8_t* p = data_ + pos_;
    pos_ += n;
    return p;
  }

 private:
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

void read_scalar(Reader& r, GgufValue& v, const std::string& key) {
  const char* what = key.c_str();
  switch (v.type) {
    case GgufValueType::UINT8: v.u = r.read<uint8_t>(what); v.i = static_cast<int64_t>(v.u); break;
    case GgufValueType::INT8: v.i = r.read<int8_t>(what); v.u = static_cast<uint64_t>(v.i); break;
    case GgufValueType::UINT16: v.u = r.read<uint16_t>(what); v.i = static_cast<int64_t>(v.u); break;
    case GgufValueType::INT16: v.i = r.read<int16_t>(what); v.u = static_cast<uint64_t>(v.i); break;
    case GgufValueType::UINT32: v.u = r.read<uint32_t>(what); v.i = static_cast<int64_t>(v.u); break;
    case GgufValueType::INT32: v.i = r.read<int32_t>(what); v.u = static_cast<uint64_t>(v.i); break;
    case GgufValueType::UINT64: v.u = r.read<uint64_t>(what); v.i = static_cast<int64_t>(v.u); break;
    case GgufValueType::INT64: v.i = r.read<int64_t>(what); v.u = static_cast<uint64_t>(v.i); break;
    case GgufValueType::FLOAT32: v.f = r.read<float>(what); break;
    case GgufValueType::FLOAT64: v.f = r.read<double>(what); break;
    case GgufValueType::BOOL: {
      uint8_t b = r.read<uint8_t>(what);
      if (b > 1) fail("metadata '%s': bool value %u is neither 0 nor 1", what, b);
      v.u = b;
      v.i = b;
      break;
    }
    default: fail("metadata '%s': unexpected value type", what);
  }
}

void read_value(Reader& r, GgufValue& v, const std::string& key, uint32_t version, int depth) {
  if (v.type == GgufValueType::STRING) {
    v.str = r.read_string(key.c_str(), version);
    return;
  }
  if (v.type != GgufValueType::ARRAY) {
    read_scalar(r, v, key);
    return;
  }
  if (depth > 2) fail("metadata '%s': arrays nested too deeply", key.c_str());
  uint32_t at = r.read<uint32_t>(key.c_str());
  if (!valid_value_type(at)) fail("metadata '%s': unknown array element type %u", key.c_str(), at);
  v.array_type = static_cast<GgufValueType>(at);
  v.array_count = version == 1 ? r.read<uint32_t>(key.c_str()) : r.read<uint64_t>(key.c_str());
  // Every element takes at least one byte (a string at least its 8-byte length field, an array
  // at least its 12-byte header), so a count larger than that allows is a lie; checking here
  // keeps reserve() bounded by the file size.
  uint64_t min_element_bytes = v.array_type == GgufValueType::STRING   ? 8
                               : v.array_type == GgufValueType::ARRAY ? 12
                                                                       : value_type_size(v.array_type);
  if (v.array_count > r.remaining() / min_element_bytes)
    fail("metadata '%s': array count %llu exceeds the file", key.c_str(), (unsigned long long)v.array_count);
  if (v.array_type == GgufValueType::STRING) {
    v.array_strings.reserve(v.array_count);
    for (uint64_t k = 0; k < v.array_count; ++k) v.array_strings.push_back(r.read_string(key.c_str(), version));
  } else if (v.array_type == GgufValueType::ARRAY) {
    // Nested arrays are legal but used by no model we load: validate and skip them.
    for (uint64_t k = 0; k < v.array_count; ++k) {
      GgufValue inner;
      inner.type = GgufValueType::ARRAY;
      read_value(r, inner, key, version, depth + 1);
    }
  } else {
    uint64_t bytes = v.array_count * value_type_size(v.array_type);
    v.array_data = r.take(bytes, key.c_str());
  }
}

}  // namespace

std::string_view gguf_value_type_name(GgufValueType t) {
  static const char* names[] = {"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
                                "bool", "string", "array", "uint64", "int64", "float64"};
  auto i = static_cast<uint32_t>(t);
  return i < 13 ? names[i] : "unknown";
}

bool GgufValue::is_integer() const {
  switch (type) {
    case GgufValueType::UINT8: case GgufValueType::INT8: case GgufValueType::UINT16:
    case GgufValueType::INT16: case GgufValueType::UINT32: case GgufValueType::INT32:
    case GgufValueType::UINT64: case GgufValueType::INT64: return true;
    default: return false;
  }
}
bool GgufValue::is_float() const {
  return type == GgufValueType::FLOAT32 || type == GgufValueType::FLOAT64;
}

int64_t GgufTensorInfo::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

GgufFile GgufFile::open(const std::string& path) {
  // O_NONBLOCK: a FIFO given as a model would block open() until some writer came along; this
  // way it opens at once and is refused below. Reads of a regular file ignore the flag.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail("cannot open '%s': %s", path.c_str(), std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("'%s' is not a regular file", path.c_str());
  }
  auto size = static_cast<uint64_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    fail("'%s' is empty, not a GGUF file", path.c_str());
  }
  void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int map_errno = errno;
  ::close(fd);
  if (p == MAP_FAILED) fail("cannot map '%s': %s", path.c_str(), std::strerror(map_errno));
  GgufFile f;
  f.mapping_ = std::shared_ptr<void>(p, [size](void* q) { munmap(q, size); });
  f.data_ = static_cast<const uint8_t*>(p);
  f.size_ = size;
  f.path_ = path;
  try {
    f.parse();
  } catch (const Error& e) {
    throw Error(format("'%s': %s", path.c_str(), e.what()));
  }
  return f;
}

void GgufFile::release_pages(const void* p, size_t n) const {
  if (!is_mapped() || n == 0) return;
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(p), end = begin + n;
  const auto data = reinterpret_cast<uintptr_t>(data_);
  if (begin < data || end > data + size_) return;
  const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  // Unchecked: a refusal only leaves the pages resident.
  if (first < last) madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

GgufFile GgufFile::from_memory(std::span<const uint8_t> bytes) {
  GgufFile f;
  f.data_ = bytes.data();
  f.size_ = bytes.size();
  f.path_ = "<memory>";
  f.parse();
  return f;
}

void GgufFile::parse() {
  Reader r(data_, size_);
  if (size_ < 4 || std::memcmp(data_, "GGUF", 4) != 0) fail("not a GGUF file (bad magic)");
  r.take(4, "magic");
  version_ = r.read<uint32_t>("version");
  if (version_ != 2 && version_ != 3) fail("GGUF version %u is not supported (2 and 3 are)", version_);
  uint64_t num_tensors = r.read<uint64_t>("tensor count");
  uint64_t num_keys = r.read<uint64_t>("metadata count");
  if (num_tensors > kMaxTensors) fail("tensor count %llu is implausible", (unsigned long long)num_tensors);
  if (num_keys > kMaxKeys) fail("metadata count %llu is implausible", (unsigned long long)num_keys);

  for (uint64_t k = 0; k < num_keys; ++k) {
    std::string key(r.read_string("metadata key", version_));
    if (key.empty()) fail("metadata entry %llu has an empty key", (unsigned long long)k);
    const uint64_t value_start = r.pos();
    uint32_t t = r.read<uint32_t>("metadata value type");
    if (!valid_value_type(t)) fail("metadata '%s' has unknown value type %u", key.c_str(), t);
    GgufValue v;
    v.type = static_cast<GgufValueType>(t);
    read_value(r, v, key, version_, 0);
    v.encoded = std::span<const uint8_t>(data_ + value_start, r.pos() - value_start);
    if (values_.count(key)) fail("metadata key '%s' appears twice", key.c_str());
    keys_.push_back(key);
    values_.emplace(std::move(key), std::move(v));
  }

  if (const GgufValue* a = find("general.alignment")) {
    // The format asks for a multiple of 8; less would misalign f32 tensor data.
    if (!a->is_integer() || a->u < 8 || a->u > 65536 || (a->u & (a->u - 1)) != 0)
      fail("general.alignment must be a power of two from 8 to 65536");
    alignment_ = a->u;
  }

  tensors_.reserve(num_tensors);
  for (uint64_t k = 0; k < num_tensors; ++k) {
    GgufTensorInfo t;
    t.name = std::string(r.read_string("tensor name", version_));
    uint32_t n_dims = r.read<uint32_t>("tensor dimension count");
    if (n_dims == 0 || n_dims > kMaxDims)
      fail("tensor '%s' has %u dimensions (1 to %llu allowed)", t.name.c_str(), n_dims, (unsigned long long)kMaxDims);
    int64_t elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t ne = r.read<uint64_t>("tensor dimension");
      if (ne == 0 || ne > (uint64_t(1) << 40))
        fail("tensor '%s' dimension %u has size %llu", t.name.c_str(), d, (unsigned long long)ne);
      if (static_cast<uint64_t>(elements) > (uint64_t(1) << 50) / ne)
        fail("tensor '%s' has too many elements", t.name.c_str());
      elements *= static_cast<int64_t>(ne);
      t.shape.push_back(static_cast<int64_t>(ne));
    }
    uint32_t type_id = r.read<uint32_t>("tensor type");
    auto traits = ggml_type_traits(type_id);
    if (!traits) fail("tensor '%s' has unknown type %u", t.name.c_str(), type_id);
    t.type = static_cast<GgmlType>(type_id);
    if (t.shape[0] % traits->block_size != 0)
      fail("tensor '%s': row length %lld is not a multiple of the %s block size %lld", t.name.c_str(),
           (long long)t.shape[0], std::string(traits->name).c_str(), (long long)traits->block_size);
    t.num_bytes = static_cast<uint64_t>(elements / traits->block_size) * traits->type_size;
    t.offset = r.read<uint64_t>("tensor offset");
    if (t.offset % alignment_ != 0)
      fail("tensor '%s' offset %llu is not aligned to %llu", t.name.c_str(), (unsigned long long)t.offset,
           (unsigned long long)alignment_);
    if (tensor_index_.count(t.name)) fail("tensor '%s' appears twice", t.name.c_str());
    tensor_index_.emplace(t.name, tensors_.size());
    tensors_.push_back(std::move(t));
  }

  uint64_t header_end = r.pos();
  data_offset_ = (header_end + alignment_ - 1) / alignment_ * alignment_;
  if (num_tensors > 0 && data_offset_ > size_) fail("tensor data section starts past the end of the file");
  uint64_t data_size = size_ - std::min(data_offset_, size_);
  for (const auto& t : tensors_) {
    if (t.offset > data_size || t.num_bytes > data_size - t.offset)
      fail("tensor '%s' data (offset %llu, %llu bytes) is not within the file (%llu data bytes)", t.name.c_str(),
           (unsigned long long)t.offset, (unsigned long long)t.num_bytes, (unsigned long long)data_size);
  }
  // Two tensors over the same bytes: llama.cpp refuses any tensor not at the offset its
  // predecessors' sizes give; we refuse the overlaps (writing one would change the other).
  std::vector<const GgufTensorInfo*> by_offset;
  by_offset.reserve(tensors_.size());
  for (const auto& t : tensors_) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const GgufTensorInfo* a, const GgufTensorInfo* b) { return a->offset < b->offset; });
  for (size_t k = 1; k < by_offset.size(); ++k) {
    const GgufTensorInfo& before = *by_offset[k - 1];
    if (before.offset + before.num_bytes > by_offset[k]->offset)
      fail("tensors '%s' and '%s' overlap in the file's data", before.name.c_str(), by_offset[k]->name.c_str());
  }
}

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = values_.find(std::string(key));
  return it == values_.end() ? nullptr : &it->second;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {
[[noreturn]] void wrong_type(std::string_view key, const GgufValue& v, const char* wanted) {
  fail("metadata '%.*s' is %s, expected %s", (int)key.size(), key.data(),
       std::string(gguf_value_type_name(v.type)).c_str(), wanted);
}
}  // namespace

std::optional<std::string> GgufFile::opt_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GgufValueType::STRING) wrong_type(key, *v, "a string");
  return std::string(v->str);
}

std::string GgufFile::get_string(std::string_view key) const {
  auto s = opt_string(key);
  if (!s) fail("metadata '%.*s' is missing", (int)key.size(), key.data());
  return *s;
}

std::optional<uint64_t> GgufFile::opt_uint(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_integer()) wrong_type(key, *v, "an integer");
  if (v->i < 0 && v->type != GgufValueType::UINT64)
    fail("metadata '%.*s' is negative (%lld)", (int)key.size(), key.data(), (long long)v->i);
  return v->u;
}

uint64_t GgufFile::get_uint(std::string_view key) const {
  auto u = opt_uint(key);
  if (!u) fail("metadata '%.*s' is missing", (int)key.size(), key.data());
  return *u;
}

std::optional<int64_t> GgufFile::opt_int(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_integer()) wrong_type(key, *v, "an integer");
  if (v->type == GgufValueType::UINT64 && v->u > static_cast<uint64_t>(INT64_MAX))
    fail("metadata '%.*s' = %llu does not fit a signed integer", (int)key.size(), key.data(), (unsigned long long)v->u);
  return v->i;
}

std::optional<double> GgufFile::opt_float(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->is_float()) return v->f;
  if (v->type == GgufValueType::UINT64) return static_cast<double>(v->u);
  if (v->is_integer()) return static_cast<double>(v->i);
  wrong_type(key, *v, "a number");
}

std::optional<bool> GgufFile::opt_bool(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GgufValueType::BOOL) wrong_type(key, *v, "a bool");
  return v->u != 0;
}

std::vector<std::string_view> GgufFile::get_string_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return {};
  if (v->type != GgufValueType::ARRAY || v->array_type != GgufValueType::STRING)
    wrong_type(key, *v, "an array of strings");
  return v->array_strings;
}

namespace {
template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
}  // namespace

std::vector<float> GgufFile::get_float_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return {};
  if (v->type != GgufValueType::ARRAY) wrong_type(key, *v, "an array of numbers");
  std::vector<float> out(v->array_count);
  for (uint64_t k = 0; k < v->array_count; ++k) {
    switch (v->array_type) {
      case GgufValueType::FLOAT32: out[k] = load<float>(v->array_data + 4 * k); break;
      case GgufValueType::FLOAT64: out[k] = static_cast<float>(load<double>(v->array_data + 8 * k)); break;
      default: fail("metadata '%.*s' is an array of %s, expected floats", (int)key.size(), key.data(),
                    std::string(gguf_value_type_name(v->array_type)).c_str());
    }
  }
  return out;
}

std::vector<int64_t> GgufFile::get_int_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return {};
  if (v->type != GgufValueType::ARRAY) wrong_type(key, *v, "an array of integers");
  std::vector<int64_t> out(v->array_count);
  const uint8_t* p = v->array_data;
  for (uint64_t k = 0; k < v->array_count; ++k) {
    switch (v->array_type) {
      case GgufValueType::UINT8: out[k] = load<uint8_t>(p + k); break;
      case GgufValueType::INT8: out[k] = load<int8_t>(p + k); break;
      case GgufValueType::UINT16: out[k] = load<uint16_t>(p + 2 * k); break;
      case GgufValueType::INT16: out[k] = load<int16_t>(p + 2 * k); break;
      case GgufValueType::UINT32: out[k] = load<uint32_t>(p + 4 * k); break;
      case GgufValueType::INT32: out[k] = load<int32_t>(p + 4 * k); break;
      case GgufValueType::UINT64: out[k] = static_cast<int64_t>(load<uint64_t>(p + 8 * k)); break;
      case GgufValueType::INT64: out[k] = load<int64_t>(p + 8 * k); break;
      default: fail("metadata '%.*s' is an array of %s, expected integers", (int)key.size(), key.data(),
                    std::string(gguf_value_type_name(v->array_type)).c_str());
    }
  }
  return out;
}

}  // namespace pagedchat
