#pragma once
// Paged prefill attention: a chunk of query tokens per sequence against its cached prefix plus
// the chunk itself (causal), all read through the block table, which is what chunked prefill and
// prefix-cache hits need. The chunk's K/V must be written first (kv_write). GQA-aware: a CTA
// serves rows (token, query head) of one kv head and loads each K/V tile once for them.
// CPU reference: reference/attention_reference.h.
//
// A plain SIMT flash-attention (no tensor cores yet): correct for every shape the decode kernel
// takes (head_dim 64/128/256, any block size, f16/bf16); its TFLOP/s is a first figure, not a bar.

#include <cuda_runtime.h>

#include "kernels/common/kernel_args.h"
#include "kernels/common/kv_dtype.h"
#include "kernels/common/paged_kv_view.h"

namespace pagedchat::kernels {

// rows: device pointers; rows.max_q_len sizes the grid. Throws Error for an unsupported shape
// or a launch failure.
void prefill_attention(const PagedKvView<const uint16_t>& kv, KvDtype dtype, const AttentionRows& rows,
                       cudaStream_t stream);

}  // namespace pagedchat::kernels
