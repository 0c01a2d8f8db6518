#include "engine/quantize/importance_matrix.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "engine/common/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/quantize/output_file.h"

namespace pagedchat::quantize {

namespace {

constexpr std::string_view kSumsSuffix = ".in_sum2";
constexpr std::string_view kCountsSuffix = ".counts";

bool strip_suffix(std::string& name, std::string_view suffix) {
  if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return false;
  name.resize(name.size() - suffix.size());
  return true;
}

std::vector<float> f32_values(const GgufFile& f, const GgufTensorInfo& t) {
  if (t.type != GgmlType::F32) fail("tensor '%s' is not F32", t.name.c_str());
  std::vector<float> v(static_cast<size_t>(t.num_elements()));
  std::memcpy(v.data(), f.tensor_data(t), v.size() * sizeof(float));
  return v;
}

ImportanceMatrix load_gguf(const GgufFile& f) {
  ImportanceMatrix m;
  for (const auto& d : f.get_string_array("imatrix.datasets")) m.datasets.emplace_back(d);
  const bool has_metadata = f.has("imatrix.datasets") && f.has("imatrix.chunk_count") && f.has("imatrix.chunk_size");
  // llama-quantize refuses one without them too: they are how a file says what it was made from.
  if (!has_metadata) fail("it lacks the imatrix.datasets, chunk_count and chunk_size keys");
  m.chunk_count = static_cast<uint32_t>(f.get_uint("imatrix.chunk_count"));
  m.chunk_size = static_cast<uint32_t>(f.get_uint("imatrix.chunk_size"));
  std::map<std::string, std::pair<const GgufTensorInfo*, const GgufTensorInfo*>> parts;
  for (const auto& t : f.tensors()) {
    std::string name = t.name;
    if (strip_suffix(name, kSumsSuffix)) parts[name].first = &t;
    else if (strip_suffix(name, kCountsSuffix)) parts[name].second = &t;
  }
  if (parts.empty()) fail("it holds no sums");
  for (const auto& [name, p] : parts) {
    if (!p.first || !p.second) fail("'%s' has sums without counts or counts without sums", name.c_str());
    ImportanceEntry e{f32_values(f, *p.first), f32_values(f, *p.second)};
    if (e.counts.empty() || e.sums.size() % e.counts.size() != 0)
      fail("'%s' has %zu sums for %zu matrices", name.c_str(), e.sums.size(), e.counts.size());
    m.entries.emplace(name, std::move(e));
  }
  return m;
}

// llama.cpp's first format: int32 entry count; per entry its name (int32 length, bytes), the
// calls summed (int32), the value count (int32) and the values (already divided by the calls'
// count and multiplied back by the calls); then optionally the chunk count and a dataset name.
ImportanceMatrix load_legacy(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) fail("cannot open it");
  const auto file_size = static_cast<int64_t>(in.tellg());
  in.seekg(0);
  // What a count may claim: no more than the bytes left (a damaged count must not allocate).
  auto bytes_left = [&] { return file_size - static_cast<int64_t>(in.tellg()); };
  auto read_i32 = [&](const char* what) {
    int32_t v = 0;
    in.read(reinterpret_cast<char*>(&v), sizeof v);
    if (!in) fail("it ends inside %s", what);
    return v;
  };
  ImportanceMatrix m;
  m.legacy = true;
  const int32_t num_entries = read_i32("the entry count");
  if (num_entries < 1 || num_entries > 1 << 20) fail("it is neither GGUF nor llama.cpp's .dat form");
  for (int32_t i = 0; i < num_entries; ++i) {
    const int32_t len = read_i32("a name length");
    if (len < 1 || len > 4096) fail("entry %d has a name of %d bytes", i, len);
    std::string name(static_cast<size_t>(len), '\0');
    in.read(name.data(), len);
    const int32_t calls = read_i32("a call count");
    const int32_t num_values = read_i32("a value count");
    if (!in || num_values < 1 || int64_t{num_values} * 4 > bytes_left())
      fail("entry '%s' claims %d values, more than the file holds", name.c_str(), num_values);
    ImportanceEntry e;
    e.sums.resize(static_cast<size_t>(num_values));
    in.read(reinterpret_cast<char*>(e.sums.data()), static_cast<std::streamsize>(e.sums.size() * sizeof(float)));
    if (!in) fail("it ends inside the values of '%s'", name.c_str());
    e.counts = {static_cast<float>(calls)};
    m.entries[std::move(name)] = std::move(e);
  }
  int32_t chunks = 0;
  if (in.read(reinterpret_cast<char*>(&chunks), sizeof chunks)) {
    m.chunk_count = static_cast<uint32_t>(std::max(chunks, 0));
    int32_t len = 0;
    if (in.read(reinterpret_cast<char*>(&len), sizeof len) && len > 0 && len < 4096) {
      std::string dataset(static_cast<size_t>(len), '\0');
      if (in.read(dataset.data(), len)) m.datasets.push_back(dataset.c_str());
    }
  }
  return m;
}

}  // namespace

ImportanceMatrix ImportanceMatrix::load(const std::string& path) {
  try {
    ImportanceMatrix m;
    std::ifstream probe(path, std::ios::binary);
    char magic[4] = {};
    if (!probe || !probe.read(magic, 4)) fail("cannot read it");
    if (std::memcmp(magic, "GGUF", 4) == 0) m = load_gguf(GgufFile::open(path));
    else m = load_legacy(path);
    for (const auto& [name, e] : m.entries)
      for (float v : e.sums)
        if (!std::isfinite(v)) fail("'%s' holds a value that is not finite", name.c_str());
    return m;
  } catch (const Error& e) {
    throw Error(format("importance matrix '%s': %s", path.c_str(), e.what()));
  }
}

std::vector<float> ImportanceMatrix::column_weights(const std::string& tensor) const {
  const auto it = entries.find(tensor);
  if (it == entries.end()) return {};
  const ImportanceEntry& e = it->second;
  const int64_t cols = e.cols();
  std::vector<float> w(e.sums.size());
  for (size_t m = 0; m < e.counts.size(); ++m) {
    // As llama-quantize: GGUF counts are rounded to whole tokens, legacy sums divided by the calls.
    const float count = static_cast<float>(legacy ? static_cast<int64_t>(e.counts[m]) : std::lround(e.counts[m]));
    for (int64_t c = 0; c < cols; ++c) {
      const size_t i = m * static_cast<size_t>(cols) + static_cast<size_t>(c);
      if (legacy) w[i] = count > 0 ? e.sums[i] / count : e.sums[i];
      else w[i] = count > 0.0f ? e.sums[i] / count : 1.0f;
    }
  }
  return w;
}

void ImportanceMatrix::save(const std::string& path) const {
  GgufHeader header;
  header.set_string("general.type", "imatrix");
  header.set_string_array("imatrix.datasets", datasets);
  header.set_u32("imatrix.chunk_count", chunk_count);
  header.set_u32("imatrix.chunk_size", chunk_size);
  std::vector<const std::vector<float>*> data;
  for (const auto& [name, e] : entries) {  // (a std::map: sorted by name, as llama-imatrix sorts)
    const auto matrices = static_cast<int64_t>(e.counts.size());
    header.add_tensor(name + std::string(kSumsSuffix), GgmlType::F32, {e.cols(), matrices});
    header.add_tensor(name + std::string(kCountsSuffix), GgmlType::F32, {1, matrices});
    data.push_back(&e.sums);
    data.push_back(&e.counts);
  }
  OutputFile out(path);
  out.write(header.encode());
  for (size_t i = 0; i < data.size(); ++i) {
    out.write(data[i]->data(), data[i]->size() * sizeof(float));
    out.write_zeros(header.padding_after(i));
  }
  out.commit();
}

}  // namespace pagedchat::quantize
