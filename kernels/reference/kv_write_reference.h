#pragma once
// CPU reference of the KV write: each token's new K and V rows (f32, from the projections)
// rounded to the pool's type and stored at its slot. A negative slot is a padding token and
// writes nothing (vLLM's convention).

#include <cstdint>

#include "kernels/common/kernel_args.h"
#include "kernels/common/kv_dtype.h"
#include "kernels/common/paged_kv_view.h"

namespace pagedchat::kernels {


void kv_write_reference(const PagedKvView<uint16_t>& kv, KvDtype dtype, const KvWriteRows& rows);

}  // namespace pagedchat::kernels
