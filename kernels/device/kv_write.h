#pragma once
// KV write: scatter the new K/V rows of a flattened batch (f32, from the projections) into one
// layer's f16/bf16 pool through the slot mapping. CPU reference: reference/kv_write_reference.h.

#include <cuda_runtime.h>

#include "kernels/common/kernel_args.h"
#include "kernels/common/kv_dtype.h"
#include "kernels/common/paged_kv_view.h"

namespace pagedchat::kernels {

// rows: device pointers. Throws Error on a launch failure.
void kv_write(const PagedKvView<uint16_t>& kv, KvDtype dtype, const KvWriteRows& rows, cudaStream_t stream);

}  // namespace pagedchat::kernels
