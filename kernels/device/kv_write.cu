// KV write: one CTA per token, its threads over (kv head, dim); reads of the f32 rows are
// coalesced, and each head's writes are one contiguous head_dim run in the pool. Small traffic
// (this step's tokens only), so no vectorization.
#include "kernels/device/kv_write.h"

#include "kernels/host/cuda_check.h"

namespace pagedchat::kernels {
namespace {

template <typename KV>
__global__ void kv_write_kernel(PagedKvView<uint16_t> kv, KvWriteRows rows) {
  const int t = blockIdx.x;
  const int64_t slot = rows.slot_mapping[t];
  if (slot < 0) return;  // padding token
  const int row = kv.num_kv_heads * kv.head_dim;
  for (int i = threadIdx.x; i < row; i += blockDim.x) {
    const int h = i / kv.head_dim, d = i % kv.head_dim;
    const int64_t dst = kv.slot_offset(slot, h) + d;
    kv.k[dst] = KV::store(rows.k[static_cast<int64_t>(t) * row + i]);
    kv.v[dst] = KV::store(rows.v[static_cast<int64_t>(t) * row + i]);
  }
}

}  // namespace

// ---- launcher -------------------------------------------------------------------------------

void kv_write(const PagedKvView<uint16_t>& kv, KvDtype dtype, const KvWriteRows& rows, cudaStream_t stream) {
  if (rows.num_tokens <= 0) return;
  const dim3 grid(static_cast<unsigned>(rows.num_tokens));
  if (dtype == KvDtype::F16)
    kv_write_kernel<KvF16><<<grid, 128, 0, stream>>>(kv, rows);
  else
    kv_write_kernel<KvBf16><<<grid, 128, 0, stream>>>(kv, rows);
  PC_CUDA_CHECK(cudaGetLastError());
}

}  // namespace pagedchat::kernels
