#pragma once
// What the CUDA backend's forward pass needs to know of a ForwardBatch beyond its fields, worked
// out on the host before any launch: each sequence's context length, the grid bounds, whether
// the step is a pure decode (one token per sequence: the split-K decode kernel) or holds prompt
// chunks (the prefill kernel), and the one packed buffer of int32 metadata that a single
// host-to-device copy moves. C++17, no CUDA: tested on the CPU.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/backend/forward_batch.h"

namespace pagedchat::kernels {

struct BatchPlan {
  int32_t num_tokens = 0, num_seqs = 0, num_logits = 0;
  std::vector<int32_t> seq_lens;  // [num_seqs] position of the sequence's last token + 1
  int32_t max_q_len = 0, max_seq_len = 0;
  int32_t block_table_stride = 0; // the batch's max_blocks_per_seq
  bool decode_only = false;       // every sequence has one token (token s = sequence s)

  // Offsets in int32 units into the packed buffer, each a multiple of 4 (16 bytes), so every
  // array is aligned for its kernel. slot_mapping is int64: two int32 units per token.
  int64_t token_ids = 0, positions = 0, slot_mapping = 0, cu_seqlens_q = 0, seq_lens_at = 0, block_tables = 0,
          logits_indices = 0, total = 0;
  std::vector<int32_t> packed;    // [total] what the device buffer holds
};

inline int64_t align4(int64_t n) { return (n + 3) / 4 * 4; }

// The batch must be valid (ForwardBatch's contract): num_seqs >= 1, tokens of a sequence in order.
inline BatchPlan plan_batch(const ForwardBatch& b) {
  BatchPlan p;
  p.num_tokens = b.num_tokens();
  p.num_seqs = b.num_seqs();
  p.num_logits = static_cast<int32_t>(b.logits_indices.size());
  p.seq_lens.resize(static_cast<size_t>(p.num_seqs));
  p.decode_only = true;
  for (int32_t s = 0; s < p.num_seqs; ++s) {
    const int32_t q_len = b.cu_seqlens_q[s + 1] - b.cu_seqlens_q[s];
    p.seq_lens[s] = b.positions[b.cu_seqlens_q[s + 1] - 1] + 1;
    p.max_q_len = std::max(p.max_q_len, q_len);
    p.max_seq_len = std::max(p.max_seq_len, p.seq_lens[s]);
    p.decode_only = p.decode_only && q_len == 1;
  }
  p.block_table_stride = b.max_blocks_per_seq;
  const int64_t n = p.num_tokens, width = b.max_blocks_per_seq;
  int64_t at = 0;
  auto place = [&](int64_t& offset, int64_t count) {
    offset = at;
    at += align4(count);
  };
  place(p.token_ids, n);
  place(p.positions, n);
  place(p.slot_mapping, 2 * n);
  place(p.cu_seqlens_q, p.num_seqs + 1);
  place(p.seq_lens_at, p.num_seqs);
  place(p.block_tables, p.num_seqs * width);
  place(p.logits_indices, p.num_logits);
  p.total = at;
  p.packed.assign(static_cast<size_t>(at), 0);
  int32_t* base = p.packed.data();
  std::copy(b.token_ids.begin(), b.token_ids.end(), base + p.token_ids);
  std::copy(b.positions.begin(), b.positions.end(), base + p.positions);
  std::memcpy(base + p.slot_mapping, b.slot_mapping.data(), static_cast<size_t>(n) * sizeof(int64_t));
  std::copy(b.cu_seqlens_q.begin(), b.cu_seqlens_q.end(), base + p.cu_seqlens_q);
  std::copy(p.seq_lens.begin(), p.seq_lens.end(), base + p.seq_lens_at);
  std::copy(b.block_tables.begin(), b.block_tables.end(), base + p.block_tables);
  std::copy(b.logits_indices.begin(), b.logits_indices.end(), base + p.logits_indices);
  return p;
}

}  // namespace pagedchat::kernels
