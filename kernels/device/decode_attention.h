#pragma once
// Paged decode attention: one query token per sequence against its whole context, read through
// the block table. GQA-aware (a CTA serves plan.head_tile query heads of one kv head, so each
// K/V row is loaded once for them), online softmax, and for long contexts or small batches a
// split of the context over CTAs whose partial states split_k_reduce merges.
// CPU reference: reference/attention_reference.h (q_len = 1).
//
// Supported: head_dim 64, 128, 256 (decode_plan.h says why); any block size (the view does the
// page arithmetic); f16 and bf16 KV; q and out f32.

#include <cuda_runtime.h>

#include "kernels/common/decode_plan.h"
#include "kernels/common/kernel_args.h"
#include "kernels/common/kv_dtype.h"
#include "kernels/common/paged_kv_view.h"

namespace pagedchat::kernels {

// rows: device pointers, token s = sequence s (cu_seqlens_q unused); rows.max_seq_len bounds
// seq_lens. plan: plan_decode() for these rows; workspace: plan.workspace_bytes of device memory (may be null when 0).
// Throws Error for an unsupported shape or a launch failure.
void decode_attention(const PagedKvView<const uint16_t>& kv, KvDtype dtype, const AttentionRows& rows,
                      const DecodePlan& plan, void* workspace, cudaStream_t stream);

}  // namespace pagedchat::kernels
