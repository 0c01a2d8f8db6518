#pragma once
// The non-KV arguments of the attention and KV-write kernels, one struct each, shared by the
// CUDA launchers (device pointers) and the CPU references (host pointers), so a check runs
// both on the same inputs. Plain C++17, no CUDA headers: the references build without CUDA.

#include <cstdint>

namespace pagedchat::kernels {

// Token t of sequence s (t in [cu_seqlens_q[s], cu_seqlens_q[s + 1])) is at position
// seq_lens[s] - q_len + (t - cu_seqlens_q[s]), q_len = cu_seqlens_q[s + 1] - cu_seqlens_q[s],
// and attends to positions [0, its position] of its sequence (causal). Decode: q_len = 1 for
// every sequence, token t = sequence t. K/V of this step's tokens must already be written.
struct AttentionRows {
  const float* q = nullptr;               // [num_tokens, num_heads, head_dim]
  float* out = nullptr;                   // [num_tokens, num_heads, head_dim]
  const int32_t* cu_seqlens_q = nullptr;  // [num_seqs + 1]; decode kernel: unused
  const int32_t* seq_lens = nullptr;      // [num_seqs] context length after this step's tokens, >= 1
  int32_t num_seqs = 0;
  int32_t num_heads = 0;                  // a multiple of the pool's num_kv_heads (GQA)
  float scale = 1.0f;                     // softmax scale, usually 1 / sqrt(head_dim)
  // Host-known bounds that size a launch's grid (the references ignore them).
  int32_t max_q_len = 1;                  // max over sequences of q_len
  int32_t max_seq_len = 1;                // max over sequences of seq_lens
};

struct KvWriteRows {
  const float* k = nullptr;               // [num_tokens, num_kv_heads, head_dim]
  const float* v = nullptr;               // [num_tokens, num_kv_heads, head_dim]
  const int64_t* slot_mapping = nullptr;  // [num_tokens] block * block_size + slot in block; < 0: padding, skipped
  int32_t num_tokens = 0;
};

}  // namespace pagedchat::kernels
