// The KV write, one element at a time.
#include "kernels/reference/kv_write_reference.h"

namespace pagedchat::kernels {

void kv_write_reference(const PagedKvView<uint16_t>& kv, KvDtype dtype, const KvWriteRows& rows) {
  const int64_t row = static_cast<int64_t>(kv.num_kv_heads) * kv.head_dim;
  for (int t = 0; t < rows.num_tokens; ++t) {
    const int64_t slot = rows.slot_mapping[t];
    if (slot < 0) continue;
    for (int h = 0; h < kv.num_kv_heads; ++h)
      for (int d = 0; d < kv.head_dim; ++d) {
        const int64_t src = t * row + static_cast<int64_t>(h) * kv.head_dim + d;
        const int64_t dst = kv.slot_offset(slot, h) + d;
        kv.k[dst] = dtype == KvDtype::F16 ? KvF16::store(rows.k[src]) : KvBf16::store(rows.k[src]);
        kv.v[dst] = dtype == KvDtype::F16 ? KvF16::store(rows.v[src]) : KvBf16::store(rows.v[src]);
      }
  }
}

}  // namespace pagedchat::kernels
