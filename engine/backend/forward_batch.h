#pragma once
// One forward pass over a flattened batch: the new tokens of several sequences concatenated,
// each with its position and the KV slot it writes, plus each sequence's block table so that
// attention reads its whole context from the paged pool. Field names follow vLLM.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace pagedchat {

struct ForwardBatch {
  std::vector<int32_t> token_ids;     // [num_tokens]
  std::vector<int32_t> positions;     // [num_tokens] position of each token in its sequence
  std::vector<int64_t> slot_mapping;  // [num_tokens] block_id * block_size + offset in block
  std::vector<int32_t> cu_seqlens_q;  // [num_seqs + 1] token range of sequence s in this batch
  std::vector<int32_t> block_tables;  // [num_seqs, max_blocks_per_seq] physical block ids
  int32_t max_blocks_per_seq = 0;
  std::vector<int32_t> logits_indices;  // [num_logits] token rows whose logits are wanted

  int32_t num_tokens() const { return static_cast<int32_t>(token_ids.size()); }
  int32_t num_seqs() const { return cu_seqlens_q.empty() ? 0 : static_cast<int32_t>(cu_seqlens_q.size()) - 1; }
  const int32_t* block_table(int32_t seq) const { return block_tables.data() + static_cast<size_t>(seq) * max_blocks_per_seq; }

  // Appends a sequence's chunk: tokens at positions [start_pos, start_pos + n), the slots they
  // write ([n], as KvManager::append gave them) and the sequence's block table, through which
  // attention reads the whole context; wants_logits asks for the logits of the chunk's last
  // token. Tables shorter than max_blocks_per_seq are padded with -1.
  void add_sequence(const int32_t* tokens, int32_t n, int32_t start_pos, const std::vector<int32_t>& table,
                    std::span<const int64_t> slots, bool wants_logits);
  // Asks for the logits of every one of the last n tokens added (n <= the last sequence's
  // chunk): speculative decoding checks a drafted token against the row before it.
  void want_last_logits(int32_t n);
  // The same with the slots worked out from the block table, for callers without a KV manager
  // (tests, the backend check). Precondition: the table covers [0, start_pos + n).
  void add_sequence(const int32_t* tokens, int32_t n, int32_t start_pos, const std::vector<int32_t>& table,
                    int32_t block_size, bool wants_logits);
};

}  // namespace pagedchat
