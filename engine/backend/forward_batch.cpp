// Building a flattened batch: one sequence's chunk at a time, with the slots its tokens write.
#include "engine/backend/forward_batch.h"

#include <algorithm>
#include <cassert>

namespace pagedchat {
namespace {

// The slots of positions [start_pos, start_pos + n) through a block table, as the KV manager's
// append and slot_mapping give them.
std::vector<int64_t> slots_from_table(const std::vector<int32_t>& table, int32_t block_size, int32_t start_pos,
                                      int32_t n) {
  std::vector<int64_t> slots;
  slots.reserve(static_cast<size_t>(n));
  for (int32_t pos = start_pos; pos < start_pos + n; ++pos)
    slots.push_back(static_cast<int64_t>(table[pos / block_size]) * block_size + pos % block_size);
  return slots;
}

}  // namespace

void ForwardBatch::add_sequence(const int32_t* tokens, int32_t n, int32_t start_pos,
                                const std::vector<int32_t>& table, std::span<const int64_t> slots,
                                bool wants_logits) {
  assert(n > 0);
  assert(static_cast<int64_t>(slots.size()) == n);
  if (cu_seqlens_q.empty()) cu_seqlens_q.push_back(0);
  int32_t width = static_cast<int32_t>(table.size());
  if (width > max_blocks_per_seq) {
    // Widen the existing rows, keeping them row-major.
    std::vector<int32_t> wider(static_cast<size_t>(num_seqs()) * width, -1);
    for (int32_t s = 0; s < num_seqs(); ++s)
      std::copy_n(block_tables.begin() + static_cast<size_t>(s) * max_blocks_per_seq, max_blocks_per_seq,
                  wider.begin() + static_cast<size_t>(s) * width);
    block_tables = std::move(wider);
    max_blocks_per_seq = width;
  }
  size_t row = block_tables.size();
  block_tables.resize(row + max_blocks_per_seq, -1);
  std::copy(table.begin(), table.end(), block_tables.begin() + row);
  for (int32_t i = 0; i < n; ++i) {
    token_ids.push_back(tokens[i]);
    positions.push_back(start_pos + i);
  }
  slot_mapping.insert(slot_mapping.end(), slots.begin(), slots.end());
  if (wants_logits) logits_indices.push_back(num_tokens() - 1);
  cu_seqlens_q.push_back(num_tokens());
}

void ForwardBatch::want_last_logits(int32_t n) {
  assert(num_seqs() > 0 && n <= cu_seqlens_q.back() - cu_seqlens_q[cu_seqlens_q.size() - 2]);
  for (int32_t i = num_tokens() - n; i < num_tokens(); ++i) logits_indices.push_back(i);
}

void ForwardBatch::add_sequence(const int32_t* tokens, int32_t n, int32_t start_pos,
                                const std::vector<int32_t>& table, int32_t block_size, bool wants_logits) {
  assert(n > 0);
  assert(static_cast<int64_t>(table.size()) * block_size >= start_pos + n);
  add_sequence(tokens, n, start_pos, table, slots_from_table(table, block_size, start_pos, n), wants_logits);
}

}  // namespace pagedchat
