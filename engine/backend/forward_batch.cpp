// Building a flattened batch: one sequence's chunk at a time, slots from its block table.
#include "engine/backend/forward_batch.h"

#include <algorithm>
#include <cassert>

namespace pagedchat {

void ForwardBatch::add_sequence(const int32_t* tokens, int32_t n, int32_t start_pos,
                                const std::vector<int32_t>& table, int32_t block_size, bool wants_logits) {
  assert(n > 0);
  assert(static_cast<int64_t>(table.size()) * block_size >= start_pos + n);
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
    int32_t pos = start_pos + i;
    token_ids.push_back(tokens[i]);
    positions.push_back(pos);
    slot_mapping.push_back(static_cast<int64_t>(table[pos / block_size]) * block_size + pos % block_size);
  }
  if (wants_logits) logits_indices.push_back(num_tokens() - 1);
  cu_seqlens_q.push_back(num_tokens());
}

}  // namespace pagedchat
