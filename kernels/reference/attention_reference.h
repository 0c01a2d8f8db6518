#pragma once
// CPU reference of paged causal attention, the truth the CUDA decode and prefill kernels are
// checked against (pagedchat-cli check kernels) and which is itself checked against the CPU
// backend's attention (tests/engine/backend/test_kernel_reference.cpp). Plain loops, two-pass softmax
// in double, K/V read through the same PagedKvView as the kernels. Engine-independent: it
// needs only the kernels/ headers.
// Rows and positions as in kernel_args.h (AttentionRows); decode is the case q_len = 1.

#include <cstdint>

#include "kernels/common/kernel_args.h"
#include "kernels/common/kv_dtype.h"
#include "kernels/common/paged_kv_view.h"

namespace pagedchat::kernels {


void attention_reference(const PagedKvView<const uint16_t>& kv, KvDtype dtype, const AttentionRows& rows);
void attention_reference(const PagedKvView<const float>& kv, const AttentionRows& rows);

}  // namespace pagedchat::kernels
