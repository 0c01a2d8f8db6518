#pragma once
// The reduce step of split-K decode attention: merges each (sequence, head)'s partial online-
// softmax states, one per split of its context, into the normalized output.

#include <cstdint>

#include <cuda_runtime.h>

namespace pagedchat::kernels {

// part_ml:  [num_seqs, num_heads, num_splits] float2 (running max m, sum l) per split
// part_acc: [num_seqs, num_heads, num_splits, head_dim] unnormalized accumulators
// seq_lens: [num_seqs]; split i of a sequence covers [i * partition_size, ...), splits past
//           its length were never written and are not read.
// out:      [num_seqs, num_heads, head_dim]
void split_k_reduce(const float2* part_ml, const float* part_acc, const int32_t* seq_lens, int32_t num_seqs,
                    int32_t num_heads, int32_t head_dim, int32_t num_splits, int32_t partition_size, float* out,
                    cudaStream_t stream);

}  // namespace pagedchat::kernels
