#include "engine/model/model_identity.h"

#include <algorithm>

#include "engine/kv/block_hash.h"

namespace pagedchat {
namespace {

uint64_t absorb(uint64_t h, const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; i += 8) {
    uint64_t word = 0;
    for (size_t j = 0; j < 8 && i + j < n; ++j) word |= static_cast<uint64_t>(p[i + j]) << (8 * j);
    h = mix64(h ^ word);
  }
  return mix64(h ^ n);
}

uint64_t absorb_matrix(uint64_t h, const WeightMatrix& m) {
  const size_t bytes = static_cast<size_t>(m.rows) * m.row_bytes;
  if (m.data == nullptr || bytes == 0) return mix64(h);
  constexpr size_t kSample = 256;
  const size_t n = std::min(bytes, kSample);
  h = absorb(h, m.data, n);
  h = absorb(h, m.data + (bytes - n) / 2, n);
  return absorb(h, m.data + bytes - n, n);
}

}  // namespace

uint64_t model_file_identity(const ModelWeights& w) {
  uint64_t h = mix64(w.file.file_size() ^ 0x6d6f64656c4964ull);
  // The header: metadata and tensor table (the first MiB holds them for every model we load).
  h = absorb(h, w.file.data(), std::min<uint64_t>(w.file.file_size(), 1u << 20));
  h = absorb_matrix(h, w.token_embedding);
  for (const LayerWeights& l : w.layers) {
    for (const WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) h = absorb_matrix(h, *m);
    for (const std::vector<float>* norm : {&l.attn_norm, &l.ffn_norm})
      h = absorb(h, reinterpret_cast<const uint8_t*>(norm->data()), norm->size() * sizeof(float));
  }
  return absorb_matrix(h, w.output);
}

}  // namespace pagedchat
