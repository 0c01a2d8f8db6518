// One CTA per (head, sequence), one thread per output dim; each thread folds the splits'
// states with the same SoftmaxState::merge the CPU tests prove. Reads are small next to the KV.
#include "kernels/device/split_k_reduce.h"

#include "kernels/host/cuda_check.h"
#include "kernels/common/online_softmax.h"

namespace pagedchat::kernels {
namespace {

__global__ void split_k_reduce_kernel(const float2* __restrict__ part_ml, const float* __restrict__ part_acc,
                                      const int32_t* __restrict__ seq_lens, int32_t num_heads, int32_t head_dim,
                                      int32_t num_splits, int32_t partition_size, float* __restrict__ out) {
  const int head = blockIdx.x, seq = blockIdx.y, d = threadIdx.x;
  const int used = (seq_lens[seq] + partition_size - 1) / partition_size;
  const int64_t row = static_cast<int64_t>(seq) * num_heads + head;
  SoftmaxState st;
  float acc = 0.0f;
  for (int s = 0; s < used; ++s) {
    const float2 ml = part_ml[row * num_splits + s];
    merge_into(st, &acc, SoftmaxState{ml.x, ml.y}, &part_acc[(row * num_splits + s) * head_dim + d], 1);
  }
  out[row * head_dim + d] = acc * st.inv_sum();
}

}  // namespace

// ---- launcher -------------------------------------------------------------------------------

void split_k_reduce(const float2* part_ml, const float* part_acc, const int32_t* seq_lens, int32_t num_seqs,
                    int32_t num_heads, int32_t head_dim, int32_t num_splits, int32_t partition_size, float* out,
                    cudaStream_t stream) {
  if (num_seqs <= 0) return;
  if (head_dim > 1024) fail("split_k_reduce: head_dim %d is over a CTA's 1024 threads", head_dim);
  split_k_reduce_kernel<<<dim3(num_heads, num_seqs), head_dim, 0, stream>>>(part_ml, part_acc, seq_lens, num_heads,
                                                                             head_dim, num_splits, partition_size, out);
  PC_CUDA_CHECK(cudaGetLastError());
}

}  // namespace pagedchat::kernels
